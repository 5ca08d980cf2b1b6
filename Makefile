# Two entry points for a fresh machine: `make demo` (the main job, offline) and `make test`.
.PHONY: setup demo test bench

setup:
	bash scripts/setup.sh

# `make demo MODEL=local:qwen2.5-coder-1.5b` answers with the embedded Qwen2.5-Coder-1.5B instead of SmolLM2
MODEL ?= local:smollm2

demo: setup
	.venv/bin/h2hmem demo --model $(MODEL)

test: setup
	bash scripts/start-services.sh
	.venv/bin/python -m pytest -q -ra

bench: setup
	.venv/bin/python -m bench all --quick
