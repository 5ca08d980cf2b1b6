# Two entry points for a fresh machine: `make demo` (the main job, offline) and `make test`.
.PHONY: setup demo test bench typecheck

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

# mypy with the [tool.mypy] config in pyproject.toml: strict on the lower layers (data, llm, embed,
# caption, memory, presets), default level above (errors there silenced until issue 14's merges).
typecheck:
	.venv/bin/mypy
