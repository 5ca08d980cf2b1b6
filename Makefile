# Entry points for a fresh machine: `make demo` (the main job, offline), `make test`, and `make lint` (the CI gates).
.PHONY: setup demo test lint typecheck bench

setup:
	bash scripts/setup.sh

# `make demo MODEL=local:qwen2.5-coder-1.5b` answers with the embedded Qwen2.5-Coder-1.5B instead of SmolLM2
MODEL ?= local:smollm2

demo: setup
	.venv/bin/h2hmem demo --model $(MODEL)

test: setup
	bash scripts/start-services.sh
	.venv/bin/python -m pytest -q -ra

# The gates CI runs before the tests: lint, formatting, import boundaries (contracts in pyproject.toml).
LINT_PATHS = src tests bench scripts
lint: setup
	.venv/bin/ruff check $(LINT_PATHS)
	.venv/bin/ruff format --check $(LINT_PATHS)
	.venv/bin/lint-imports

bench: setup
	.venv/bin/python -m bench all --quick

# mypy with the [tool.mypy] config in pyproject.toml: strict on the lower layers (data, records, llm, embed,
# gateway, caption, memory, presets, defaults and the bottom modules: the list is there), default level +
# check_untyped_defs above; both must report no errors.
typecheck: setup
	.venv/bin/mypy
