#!/usr/bin/env python3
"""Counts the instructions of each kernel's main loop in a `cuobjdump -sass` listing, offline (no GPU).

The main loop is the backward branch's body holding the most HMMA; its instructions are listed by opcode.
Usage: nvcc --cubin -O3 -std=c++17 -arch=sm_90 crates/engine/src/kernels/moe_prefill.cu -o k.cubin
       cuobjdump -sass k.cubin > k.sass && python3 scripts/device/sass_loops.py k.sass [KERNEL ...]
"""
import re
import sys
from collections import Counter

INSTRUCTION = re.compile(r'/\*([0-9a-f]{4,})\*/\s+((?:@!?U?P\w+\s+)?[A-Z][^;]*);')


def main_loop(instructions):
    best = None
    for addr, op in instructions:
        target = re.search(r'0x([0-9a-f]+)', op) if 'BRA' in op else None
        if not target or int(target.group(1), 16) >= addr:
            continue
        start = int(target.group(1), 16)
        body = [o for a, o in instructions if start <= a <= addr]
        mma = sum('HMMA' in o for o in body)
        if best is None or mma > best[0]:
            best = (mma, body)
    return best


def main():
    text = open(sys.argv[1]).read()
    wanted = set(sys.argv[2:])
    for part in text.split('Function : ')[1:]:
        name = part.split()[0]
        if wanted and name not in wanted:
            continue
        instructions = [(int(a, 16), o) for a, o in INSTRUCTION.findall(part)]
        loop = main_loop(instructions)
        if loop is None:
            continue
        ops = Counter(re.sub(r'^@!?U?P\w+\s+', '', o).split()[0] for o in loop[1])
        print(f"{name}: {len(instructions)} in all, loop {len(loop[1])} ({loop[0]} HMMA): "
              f"{dict(ops.most_common(10))}")


if __name__ == '__main__':
    main()
