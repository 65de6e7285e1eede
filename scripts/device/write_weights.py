# Writes the seeded random-weight checkpoint of the real config (the weight-writing part of full_size_parity.py).
import sys

import full_size_parity

full_size_parity.write_checkpoint(full_size_parity.full_config(), sys.argv[1], "cuda")
