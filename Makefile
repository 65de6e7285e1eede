# DeepRead: `make run` opens the reader, `make test` runs every suite. Both install what is missing first
# (Debian packages, PDFium, the front end's npm packages) and are quick when nothing changed.

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

export DEEPREAD_PDFIUM := $(CURDIR)/$(PDFIUM)
export DEEPREAD_FIXTURES ?= $(abspath $(CURDIR)/../shared/fixtures)

.PHONY: run test deps build ui test-rust test-ui test-desktop lint fmt clean

run: deps build
	$(APP) $(ARGS)

test: deps build test-rust test-ui test-desktop

deps: $(STAMP_SYS) $(PDFIUM) $(UI_MODULES) $(TOOLS)/tauri-driver

$(STAMP_SYS): scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	@mkdir -p $(DEPS) && touch $@

$(PDFIUM): scripts/fetch-pdfium.sh
	bash scripts/fetch-pdfium.sh $(DEPS)/pdfium

$(UI_MODULES): ui/package.json ui/package-lock.json
	cd ui && npm install --no-audit --no-fund --loglevel=error

$(TOOLS)/tauri-driver:
	cargo install tauri-driver --version 2.1.0 --locked --quiet --root $(DEPS)/tools

ui: $(UI_DIST)

$(UI_DIST): $(UI_MODULES) $(UI_SOURCES)
	cd ui && npm run --silent build

build: ui
	cargo build --workspace --bins

test-rust: ui
	cargo test --workspace --no-fail-fast

test-ui: $(UI_MODULES)
	cd ui && npm run --silent typecheck && npx vitest run --passWithNoTests

test-desktop: build $(TOOLS)/tauri-driver
	node --test --test-concurrency=1 tests/desktop/

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cd ui && npm run --silent typecheck

fmt:
	cargo fmt --all

clean:
	cargo clean
	rm -rf ui/dist
