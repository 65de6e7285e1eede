# DeepRead: `make run` opens the reader, `make test` runs every suite. Both install what is missing first
# (Debian packages, PDFium, the front end's npm packages, and on a machine with an NVIDIA GPU the CUDA
# toolkit) and are quick when nothing changed.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

DEPS       := .deps
PDFIUM     := $(DEPS)/pdfium/libpdfium.so
TOOLS      := $(DEPS)/tools/bin
STAMP_SYS  := $(DEPS)/system.stamp
UI_MODULES := ui/node_modules/.package-lock.json
UI_DIST    := ui/dist/index.html
UI_SOURCES := $(shell find ui/src -type f 2>/dev/null) ui/index.html ui/vite.config.ts ui/tsconfig.json
APP        := target/debug/deepread-app

# The GPU path: CUDA=1 builds with CUDA for compute capability CUDA_COMPUTE_CAP, CUDA=0 for the CPU. Left out,
# both follow this machine's GPU (scripts/cuda/gpu.sh says why a GPU is not used). A build for capability X
# runs on every card of X or newer: the kernels are PTX, which the driver compiles for the card it finds.
GPU                := $(shell scripts/cuda/gpu.sh)
CUDA               ?= $(word 1,$(GPU))
CUDA_COMPUTE_CAP   ?= $(if $(filter -,$(word 2,$(GPU))),86,$(word 2,$(GPU)))
CUDA_DIR           := $(CURDIR)/$(DEPS)/cuda
CUDA_STAMP         := $(DEPS)/cuda/installed
CUDA_FEATURES      := --features deepread-engine/cuda,deepread-core/cuda,deepread-cli/cuda,deepread-app/cuda
# nvcc and the link-time driver stub for building; cuBLAS and the runtime for running.
CUDA_ENV           := CUDA_HOME=$(CUDA_DIR)/site/nvidia/cu13 CUDA_COMPUTE_CAP=$(CUDA_COMPUTE_CAP) \
                      PATH=$(CUDA_DIR)/site/nvidia/cu13/bin:$$PATH \
                      LIBRARY_PATH=$(CUDA_DIR)/stub:$(CUDA_DIR)/site/nvidia/cu13/lib$${LIBRARY_PATH:+:$$LIBRARY_PATH} \
                      LD_LIBRARY_PATH=$(CUDA_DIR)/site/nvidia/cu13/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}
ifeq ($(CUDA),1)
  RUN_ENV  := env $(CUDA_ENV)
  FEATURES := $(CUDA_FEATURES)
  GPU_DEPS := $(CUDA_STAMP)
else
  RUN_ENV  :=
  FEATURES :=
  GPU_DEPS :=
endif

export DEEPREAD_PDFIUM := $(CURDIR)/$(PDFIUM)
export DEEPREAD_FIXTURES ?= $(abspath $(CURDIR)/../shared/fixtures)

.PHONY: run test deps build ui test-rust test-ui test-desktop test-package bundle check-cuda lint fmt clean

run: deps build
	$(RUN_ENV) $(APP) $(ARGS)

# Without a GPU, check-cuda still type-checks and lints the CUDA path; it runs before `build` so that the
# binaries the tests start are the CPU ones.
test: deps $(if $(filter 1,$(CUDA)),,check-cuda) build test-rust test-ui test-desktop test-package

deps: $(STAMP_SYS) $(PDFIUM) $(UI_MODULES) $(TOOLS)/tauri-driver $(GPU_DEPS)

$(STAMP_SYS): scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	@mkdir -p $(DEPS) && touch $@

$(PDFIUM): scripts/fetch-pdfium.sh
	bash scripts/fetch-pdfium.sh $(DEPS)/pdfium

$(UI_MODULES): ui/package.json ui/package-lock.json
	cd ui && npm install --no-audit --no-fund --loglevel=error

$(CUDA_STAMP): scripts/cuda/install.sh scripts/cuda/wheels.txt Cargo.lock
	bash scripts/cuda/install.sh $(DEPS)/cuda

$(TOOLS)/tauri-driver:
	cargo install tauri-driver --version 2.1.0 --locked --quiet --root $(DEPS)/tools

ui: $(UI_DIST)

$(UI_DIST): $(UI_MODULES) $(UI_SOURCES)
	cd ui && npm run --silent build

build: ui
	$(RUN_ENV) cargo build -p deepread-cli -p deepread-app --bins $(FEATURES)

test-rust: ui
	$(RUN_ENV) cargo test --workspace --no-fail-fast $(FEATURES)

# Clippy over the CUDA path for an RTX 3090 (8.6), on any machine: the engine's every target, the kernels through
# nvcc. The engine is the one crate with CUDA code (`cfg(feature = "cuda")`); the crates above it only pass the
# feature down, and `build` and `test-rust` compile them. Checking them here too cost CI 9 minutes on 2 cores
# (18.5 → 10 for this step, measured): the tauri tree's check took the core that candle's kernel build script
# needs, and that script (nvcc over candle's quantized kernels, about 7 minutes) then runs one file at a time
# unless CUDAFORGE_THREADS says otherwise. Not a full build as well: that doubled CI's time for a link step that
# the GPU jobs (docs/benchmarks.md) exercise. The binaries come from `make deps build CUDA=1` (8.6 without a GPU,
# the card's own capability with one).
check-cuda: $(CUDA_STAMP)
	env $(CUDA_ENV) CUDA_COMPUTE_CAP=86 CUDAFORGE_THREADS=$$(nproc) \
	  cargo clippy -p deepread-engine --all-targets --features deepread-engine/cuda -- -D warnings

test-ui: $(UI_MODULES)
	cd ui && npm run --silent typecheck && npx vitest run --passWithNoTests

test-desktop: build $(TOOLS)/tauri-driver
	$(RUN_ENV) node --test --test-concurrency=1 tests/desktop/

# The .deb as a person installs it (tests/package/): packaged from the binaries the desktop tests start (debug
# builds, so nothing is compiled twice), installed with apt, started from /usr/bin, a PDF opened through it.
test-package: build $(TOOLS)/tauri-driver
	node scripts/bundle.mjs --profile debug --pdfium $(PDFIUM) --bundles deb
	node --test --test-concurrency=1 tests/package/

# Release packages in target/release/bundle/{deb,appimage}/: the app and the command line, PDFium inside
# (scripts/bundle.mjs says why not `tauri build`). They are CPU builds whatever this machine has: a CUDA build
# links cuBLAS, which no Debian package of CUDA 13 provides. The bundler fetches the AppImage's tools from
# GitHub on first use; `make bundle BUNDLES=deb` makes the .deb alone.
BUNDLES ?= deb,appimage
bundle: deps ui
	cargo build --release -p deepread-app -p deepread-cli --features deepread-app/custom-protocol
	node scripts/bundle.mjs --profile release --pdfium $(PDFIUM) --bundles $(BUNDLES)

lint:
	cargo fmt --all --check
	$(RUN_ENV) cargo clippy --workspace --all-targets $(FEATURES) -- -D warnings
	cd ui && npm run --silent typecheck

fmt:
	cargo fmt --all

clean:
	cargo clean
	rm -rf ui/dist
