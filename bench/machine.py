"""The machine a benchmark runs on: CPU model, cores, and the flags that decide bfloat16 speed."""

import os
import platform

FLAGS = ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def describe():
    """One line: CPU model, cores, and which of FLAGS /proc/cpuinfo lists (bfloat16 is native with
    avx512_bf16 or amx_bf16, emulated otherwise)."""
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name") and model in ("unknown", ""):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = [flag for flag in FLAGS if flag in flags]
    return f"{model}, {os.cpu_count()} cores, flags: {' '.join(wanted) or 'none of ' + '/'.join(FLAGS)}"
