#!/usr/bin/env bash
# What the Makefile needs to know of this machine's NVIDIA GPU, as `CUDA CAP`: "1 86" for a usable card
# (the lowest compute capability of its GPUs, so one build serves them all), "0 -" when there is none or it
# cannot run our CUDA build, with the reason on stderr once.
set -uo pipefail
# A CUDA 13.0 build needs driver 580 or newer; bf16 and the tensor-core kernels need compute capability 8.0.
MIN_DRIVER=580
MIN_CAP=80
none() { [ -n "${1:-}" ] && echo "deepread: $1" >&2; echo "0 -"; exit 0; }

command -v nvidia-smi >/dev/null 2>&1 || none
query=$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null) \
  || none "nvidia-smi is installed but cannot talk to the driver (is the NVIDIA kernel module loaded?): building for the CPU; with a working driver, run again"
[ -n "$query" ] || none
cap=99999
while IFS=, read -r name gpu_cap driver; do
  gpu_cap=${gpu_cap// /}; gpu_cap=${gpu_cap/./}
  [ "$gpu_cap" -lt "$cap" ] && cap=$gpu_cap low_name=${name# }
  min_driver=${driver// /}
done <<< "$query"
driver=$min_driver
[ "${driver%%.*}" -ge "$MIN_DRIVER" ] \
  || none "the NVIDIA driver $driver is older than $MIN_DRIVER, which DeepRead's CUDA 13 build needs: building for the CPU (the text layer works); update the driver to $MIN_DRIVER or newer for the GPU"
[ "$cap" -ge "$MIN_CAP" ] \
  || none "$low_name has compute capability ${cap:0:1}.${cap:1}; DeepSeek-OCR-2 on the GPU needs 8.0 or newer (RTX 30xx and later): building for the CPU"
echo "1 $cap"
