# hf_reference.py's bench, followed by the oracle's GPU memory peaks.
import runpy
import sys

import torch

sys.argv = ["hf_reference.py"] + sys.argv[1:]
runpy.run_path("hf_reference.py", run_name="__main__")
free, total = torch.cuda.mem_get_info()
print(
    f"oracle GPU memory: peak allocated {torch.cuda.max_memory_allocated() / 1e9:.2f} GB, "
    f"peak reserved {torch.cuda.max_memory_reserved() / 1e9:.2f} GB, device in use now {(total - free) / 1e9:.2f} GB"
)
