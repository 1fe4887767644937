# One entry point for people and CI. Every target creates the virtualenv it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo check stack test test-unit lint typecheck layers chart docs bench golden clean \
	diff-karpenter diff-autoscaler

$(STAMP): pyproject.toml
	@echo "Installing Joiner and its dependencies into $(VENV) (once; a minute or two)..."
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

## Run the main job: simulate the seed Spot example on the embedded simulated cloud.
demo: $(STAMP)
	$(BIN)/joiner simulate examples/seed-spot/scenario.yaml

## Lint, type-check, layer-check, build the docs and run the whole test suite, then the
## comparisons with the real Karpenter and Cluster Autoscaler. The suite runs in one process
## (one core) and the comparison with Karpenter mostly waits on it (settle periods), so that
## comparison runs beside the suite and the Cluster Autoscaler one after the suite, each
## on its own test stack (the Karpenter one in a private network namespace). Their output
## is logged to joiner-out/ and printed in turn; any part failing fails the target.
DIFF_K_LOG := joiner-out/diff-karpenter.log
check: lint typecheck layers chart docs stack
	@mkdir -p joiner-out
	$(MAKE) --no-print-directory diff-karpenter >$(DIFF_K_LOG) 2>&1 & dk=$$!; \
	trap 'kill $$dk 2>/dev/null' INT TERM; \
	$(MAKE) --no-print-directory test; suite=$$?; \
	$(MAKE) --no-print-directory diff-autoscaler; da=$$?; \
	wait $$dk; dk_rc=$$?; \
	echo "--- make diff-karpenter, run beside the suite ($(DIFF_K_LOG)): exit $$dk_rc ---"; \
	cat $(DIFF_K_LOG); \
	[ $$suite -eq 0 ] && [ $$da -eq 0 ] && [ $$dk_rc -eq 0 ]

## Every upstream binary the tests run (built from Go modules on first use, then cached
## outside the repository): built one after another before anything runs beside another.
stack: $(STAMP)
	bash tools/kube-stack/build.sh
	bash tools/kube-stack/build-helm.sh
	bash tools/kube-stack/build-karpenter.sh
	bash tools/kube-stack/build-prometheus.sh
	bash tools/kube-stack/build-ksm.sh
	bash tools/kube-stack/build-autoscaler.sh

lint: $(STAMP)
	$(BIN)/ruff check joiner tests tools benchmarks
	$(BIN)/ruff format --check joiner tests tools benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

layers: $(STAMP)
	$(BIN)/lint-imports

## The documentation site (mkdocs.yml, pages under docs/) into joiner-out/site; strict, so a
## broken link or anchor fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir joiner-out/site

## Helm (built from Go modules on first use) lints and renders deploy/chart: the default
## (--cloud aws) and the simulated cloud.
HELM_VALUES := --set settings.clusterName=ci
chart:
	bash tools/kube-stack/build-helm.sh
	$$(bash tools/kube-stack/build-helm.sh --print-bin-dir)/helm lint deploy/chart $(HELM_VALUES)
	$$(bash tools/kube-stack/build-helm.sh --print-bin-dir)/helm template joiner deploy/chart \
	  --namespace joiner $(HELM_VALUES) >/dev/null
	$$(bash tools/kube-stack/build-helm.sh --print-bin-dir)/helm template joiner deploy/chart \
	  --namespace joiner --set cloud=simulated >/dev/null

## The whole suite, end-to-end tests on the real Kubernetes stack included (built on first use;
## Karpenter too, whose CRDs a test installs: built here, not under a test's timeout).
## The end-to-end run on AWS's APIs goes in a process of its own: moto's backends are global
## to a process, and the CloudProvider tests' moto server left launch templates behind (its
## account is now also reset at the start, so it passes either way). That process runs
## beside the rest of the suite (its own test stack and moto server, mostly waiting on
## them); its output follows the suite's, and either failing fails the target.
AWS_E2E := tests/e2e/test_controller_aws.py
AWS_E2E_LOG := joiner-out/test-e2e-aws.log
test: $(STAMP)
	bash tools/kube-stack/build.sh
	bash tools/kube-stack/build-helm.sh
	bash tools/kube-stack/build-karpenter.sh
	bash tools/kube-stack/build-prometheus.sh
	bash tools/kube-stack/build-ksm.sh
	@mkdir -p joiner-out
	JOINER_E2E=1 $(BIN)/pytest -p no:cacheprovider $(AWS_E2E) >$(AWS_E2E_LOG) 2>&1 & aws=$$!; \
	trap 'kill $$aws 2>/dev/null' INT TERM; \
	JOINER_E2E=1 $(BIN)/pytest --ignore=$(AWS_E2E); suite=$$?; \
	wait $$aws; aws_rc=$$?; \
	echo "--- $(AWS_E2E), run beside the suite ($(AWS_E2E_LOG)): exit $$aws_rc ---"; \
	cat $(AWS_E2E_LOG); \
	[ $$suite -eq 0 ] && [ $$aws_rc -eq 0 ]

## Joiner against the real Karpenter (kwok provider) on the test stack, case by case
## (tests/fidelity; builds Karpenter on first use): the fixed corpus and GENERATED cases
## from seed SEED (default: a fresh seed, printed). Ends with "generated agreement: A/N
## cases (P%), seed S" and "agreement: A/N cases (P%)" (the fixed corpus), each followed
## by "; R more agree with Karpenter's plan (kube-scheduler race), D disagree" when R > 0.
## DOCS=1 also rewrites the report section of docs/fidelity.md.
GENERATED ?= 12
SEED ?=
diff-karpenter: $(STAMP)
	bash tools/kube-stack/build.sh
	$(BIN)/python tests/fidelity/run.py --out joiner-out/fidelity --generated $(GENERATED) \
	  $(if $(SEED),--seed $(SEED)) $(if $(DOCS),--markdown docs/fidelity.md)

## Joiner's Cluster Autoscaler baseline against the real Cluster Autoscaler 1.36.1 (kwok
## provider, built from the upstream archive in ../shared/upstream on first use) on the test
## stack, case by case (tests/autoscaler). Ends with "agreement: A/N cases (P%)".
## DOCS=1 also rewrites the report section of docs/fidelity-autoscaler.md.
diff-autoscaler: $(STAMP)
	bash tools/kube-stack/build.sh
	bash tools/kube-stack/build-autoscaler.sh
	$(BIN)/python tests/autoscaler/ca_run.py --out joiner-out/fidelity-autoscaler \
	  $(if $(DOCS),--markdown docs/fidelity-autoscaler.md)

## Everything but the end-to-end tests (no Go needed).
test-unit: $(STAMP)
	$(BIN)/pytest

## Benchmarks print JSON: the simulation, the scheduling ladder (1 to 20,000 pods), each
## packing policy's cost against the LP lower bound, the realistic cases on broad NodePools
## in CPU seconds (1 h of bursts under both policies, 24 h of GPU serving, 7 days of about
## 300 nodes under both policies, start-up), the example sweep (80 cells) on 1 and 2
## local workers and on Ray with 2 CPUs, then joiner import of a synthetic week (500
## workloads, 300 nodes) backfilled into the real Prometheus (built from Go modules on first
## use) and the simulation of what it imports (as-run, Joiner, Cluster Autoscaler).
bench: $(STAMP)
	$(BIN)/python benchmarks/run_benchmarks.py
	$(BIN)/python benchmarks/scheduling.py
	$(BIN)/python benchmarks/packing.py
	$(BIN)/python benchmarks/realistic.py --repeat 3 a b d
	$(BIN)/python benchmarks/realistic.py --repeat 3 c
	$(BIN)/python benchmarks/sweep.py
	bash tools/kube-stack/build-prometheus.sh
	$(BIN)/python benchmarks/history_week.py

## Rewrite tests/golden/*/summary.json from the examples (only when decisions are meant to
## change; say which and why in the commit message). tests/sim/test_golden.py compares them.
golden: $(STAMP)
	$(BIN)/python -m joiner.testing.golden

clean:
	rm -rf $(VENV) joiner-out .pytest_cache .mypy_cache .ruff_cache
