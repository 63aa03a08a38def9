# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check lint typecheck pytest schema clean demo

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/servekit serve

demo: $(STAMP)
	$(BIN)/servekit demo

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy src

# Branch coverage of src/servekit, CLI subprocesses included; fails under the floor
# (COVERAGE_FLOOR, set from a measured run: see docs/operating.md).
COVERAGE_FLOOR ?= 80
pytest: $(STAMP)
	$(BIN)/coverage erase
	$(BIN)/coverage run -m pytest -q
	$(BIN)/coverage combine -q
	$(BIN)/coverage report --fail-under=$(COVERAGE_FLOOR)

schema: $(STAMP)
	$(BIN)/servekit package schema > schema/package.schema.json
	$(BIN)/python -c 'import pathlib, servekit.package.schema as s; p = pathlib.Path("docs/package.md"); p.write_text(s.with_reference(p.read_text()))'

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
