// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";

/// @title IndexMaps: one element of the integer index maps of the repro data-movement ops, computed on-chain.
/// @notice The maps of `gensyn_py/repro/maps.py`, element by element: `im2col` and `col2im` (convolution patches,
///         stride 1, -1 for padding), `pool` and `unpool` (k x k windows) and `causal` (key <= query). Each is a pure
///         function of its kind and a few integers, so the contract recomputes the element a trace's `index_map` op
///         claims without reading anything but the op's attributes.
library IndexMaps {
    uint256 internal constant IM2COL = 0;
    uint256 internal constant COL2IM = 1;
    uint256 internal constant POOL = 2;
    uint256 internal constant UNPOOL = 3;
    uint256 internal constant CAUSAL = 4;

    /// @notice The op's attributes as `trace.py` writes them: `["<kind>",[p0,p1,...]]`.
    function attrsJson(uint256 kind, uint256[] calldata params) internal pure returns (bytes memory json) {
        json = abi.encodePacked(hex"5b22", name(kind), hex"222c5b"); // [" kind ",[
        for (uint256 i; i < params.length; ++i) {
            json = abi.encodePacked(json, i == 0 ? "" : ",", Strings.toString(params[i]));
        }
        json = abi.encodePacked(json, "]]");
    }

    function name(uint256 kind) internal pure returns (string memory) {
        if (kind == IM2COL) return "im2col";
        if (kind == COL2IM) return "col2im";
        if (kind == POOL) return "pool";
        if (kind == UNPOOL) return "unpool";
        if (kind == CAUSAL) return "causal";
        revert ITraceProofs.BadMove(keccak256("index_map"));
    }

    /// @notice The map's shape for `params` (reverts `BadMove` for a parameter count or value the map refuses).
    function shape(uint256 kind, uint256[] calldata p) internal pure returns (uint256[] memory s) {
        _check(kind, p);
        if (kind == CAUSAL) return _pair(p[0], p[0]);
        if (kind == UNPOOL) {
            s = new uint256[](4);
            (s[0], s[1], s[2], s[3]) = (p[0], p[1], p[2], p[3]);
            return s;
        }
        if (kind == POOL) return _pair(p[0] * p[1] * (p[2] / p[4]) * (p[3] / p[4]), p[4] * p[4]);
        (uint256 oh, uint256 ow) = _out(p);
        if (kind == IM2COL) return _pair(p[0] * oh * ow, p[1] * p[4] * p[4]);
        return _pair(p[0] * p[1] * p[2] * p[3], p[4] * p[4]);
    }

    /// @notice Flat element `e` of the map (-1: a padding position, read as +0 by `take`; causal: 1 or 0).
    function element(uint256 kind, uint256[] calldata params, uint256 e) internal pure returns (int256) {
        uint256[] memory p = params; // in memory: one stack slot (the index arithmetic needs the others)
        if (kind == CAUSAL) return (e % p[0]) <= (e / p[0]) ? int256(1) : int256(0);
        uint256 k = p[4];
        if (kind == POOL || kind == UNPOOL) return int256(kind == POOL ? _pool(p, e) : _unpool(p, e));
        return kind == IM2COL ? _im2col(p, e, k) : _col2im(p, e, k);
    }

    /// @dev Row (n, oy, ox), column (ci, ky, kx) -> x[n, ci, oy + ky - pad, ox + kx - pad] of (B, C, H, W), or -1.
    function _im2col(uint256[] memory p, uint256 e, uint256 k) private pure returns (int256) {
        (uint256 oh, uint256 ow) = _out(p);
        uint256 cols = p[1] * k * k;
        uint256 row = e / cols;
        uint256 col = e % cols;
        int256 y = int256(((row / ow) % oh) + ((col / k) % k)) - int256(p[5]);
        int256 x = int256((row % ow) + (col % k)) - int256(p[5]);
        if (y < 0 || y >= int256(p[2]) || x < 0 || x >= int256(p[3])) return -1;
        uint256 nc = (row / (oh * ow)) * p[1] + col / (k * k);
        return int256((nc * p[2] + uint256(y)) * p[3] + uint256(x));
    }

    /// @dev Input (n, ci, y, x) and kernel offset (ky, kx) -> the column-matrix entry that read it, or -1.
    ///      The intermediates live in memory: on the stack they are too many for one frame.
    function _col2im(uint256[] memory p, uint256 e, uint256 k) private pure returns (int256) {
        // v: row (n, ci, y, x), ky * k + kx, oy + ky, ox + kx, oh, ow
        uint256[6] memory v;
        v[0] = e / (k * k);
        v[1] = e % (k * k);
        v[2] = ((v[0] / p[3]) % p[2]) + p[5];
        v[3] = (v[0] % p[3]) + p[5];
        (v[4], v[5]) = _out(p);
        if (v[2] < v[1] / k || v[3] < v[1] % k) return -1;
        uint256 oy = v[2] - v[1] / k;
        uint256 ox = v[3] - (v[1] % k);
        if (oy >= v[4] || ox >= v[5]) return -1;
        uint256 position = ((v[0] / (p[1] * p[2] * p[3])) * v[4] + oy) * v[5] + ox;
        return int256(position * (p[1] * k * k) + ((v[0] / (p[2] * p[3])) % p[1]) * k * k + v[1]);
    }

    /// @dev Window (n, ci, py, px), offset (ky, kx) -> x[n, ci, py * k + ky, px * k + kx].
    function _pool(uint256[] memory p, uint256 e) private pure returns (uint256) {
        uint256 k = p[4];
        uint256 pw = p[3] / k;
        uint256 row = e / (k * k);
        uint256 nc = row / ((p[2] / k) * pw);
        uint256 py = (row / pw) % (p[2] / k);
        return (nc * p[2] + py * k + (e % (k * k)) / k) * p[3] + (row % pw) * k + (e % k);
    }

    /// @dev Input (n, ci, y, x) -> its place in the window matrix (the windows partition the input).
    function _unpool(uint256[] memory p, uint256 e) private pure returns (uint256) {
        uint256 k = p[4];
        uint256 x = e % p[3];
        uint256 y = (e / p[3]) % p[2];
        uint256 nc = e / (p[2] * p[3]);
        return ((nc * (p[2] / k) + y / k) * (p[3] / k) + x / k) * k * k + (y % k) * k + (x % k);
    }

    function _out(uint256[] memory p) private pure returns (uint256 oh, uint256 ow) {
        return (p[2] + 2 * p[5] - p[4] + 1, p[3] + 2 * p[5] - p[4] + 1);
    }

    function _pair(uint256 a, uint256 b) private pure returns (uint256[] memory s) {
        s = new uint256[](2);
        (s[0], s[1]) = (a, b);
    }

    /// @dev The parameter counts and values the maps are defined for (NumPy would raise, or leave garbage, else).
    function _check(uint256 kind, uint256[] calldata p) private pure {
        bytes32 code = keccak256("index_map");
        if (kind == CAUSAL) {
            if (p.length != 1) revert ITraceProofs.BadMove(code);
            return;
        }
        uint256 want = kind == POOL || kind == UNPOOL ? 5 : 6;
        if (p.length != want || p[4] == 0) revert ITraceProofs.BadMove(code);
        if (want == 5 && (p[2] % p[4] != 0 || p[3] % p[4] != 0)) revert ITraceProofs.BadMove(code);
        if (want == 6 && (p[2] + 2 * p[5] < p[4] || p[3] + 2 * p[5] < p[4])) revert ITraceProofs.BadMove(code);
    }
}
