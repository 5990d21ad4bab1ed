// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {ERC777} from "@openzeppelin/contracts@4.8.3/token/ERC777/ERC777.sol";

/// @notice A plain ERC777 for tests: anyone may mint. Needs an ERC1820 registry at the canonical
/// address (see TestERC1820Registry), where its constructor registers it.
contract TestERC777 is ERC777 {
    constructor(string memory name_, string memory symbol_) ERC777(name_, symbol_, new address[](0)) {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount, "", "");
    }
}
