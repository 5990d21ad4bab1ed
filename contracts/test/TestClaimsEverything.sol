// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// @notice Answers `true` to every call, supportsInterface(anything) included: the contract EIP-165's
/// detection procedure guards against (it must deny 0xffffffff). Tests that such a contract is not
/// taken for an ERC721 or ERC1155.
contract TestClaimsEverything {
    fallback(bytes calldata) external returns (bytes memory) {
        return abi.encode(true);
    }
}
