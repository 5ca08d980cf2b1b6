# Two entry points for a fresh machine: `make demo` (the main job, offline) and `make test`.
.PHONY: setup demo test bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/h2hmem demo

test: setup
	bash scripts/start-services.sh
	.venv/bin/python -m pytest -q -ra

bench: setup
	.venv/bin/python -m bench all --quick
