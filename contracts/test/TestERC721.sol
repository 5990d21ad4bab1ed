// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {ERC721} from "@openzeppelin/contracts@4.8.3/token/ERC721/ERC721.sol";

/// @notice A plain ERC721 (no decimals(), like real NFTs) for tests and the dev stack: anyone may mint.
contract TestERC721 is ERC721 {
    constructor(string memory name_, string memory symbol_) ERC721(name_, symbol_) {}

    function mint(address to, uint256 tokenId) external {
        _mint(to, tokenId);
    }
}
