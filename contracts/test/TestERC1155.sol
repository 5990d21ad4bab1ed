// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {ERC1155} from "@openzeppelin/contracts@4.8.3/token/ERC1155/ERC1155.sol";

/// @notice A plain ERC1155 (no name/symbol/decimals, as the standard has none) for tests and the dev
/// stack: anyone may mint one id or a batch.
contract TestERC1155 is ERC1155 {
    constructor(string memory uri_) ERC1155(uri_) {}

    function mint(address to, uint256 id, uint256 amount) external {
        _mint(to, id, amount, "");
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata amounts) external {
        _mintBatch(to, ids, amounts, "");
    }
}
