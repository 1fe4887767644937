"""The API server's Go validation rules of core objects that the OpenAPI schema does not
carry (``joiner.api.corevalidation``), built from inputs the loader used to accept."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_files, load_text

CORPUS = Path(__file__).parents[1] / "fuzz" / "corpus" / "manifests"

REFUSED = {
    "refused-deployment-container-name-not-dns-label.yaml": (
        "spec.template.spec.containers[0].name",
        "RFC 1123 label",
    ),
    "refused-deployment-duplicate-container-name.yaml": (
        "spec.template.spec.containers[0].name",
        "also at spec.template.spec.initContainers[0]",
    ),
    "refused-deployment-restartpolicy-never.yaml": (
        "spec.template.spec.restartPolicy",
        "restart Always",
    ),
    "refused-deployment-maxunavailable-not-a-percent.yaml": (
        "spec.strategy.rollingUpdate.maxUnavailable",
        "'abc%' must be an integer or a percentage",
    ),
    "refused-deployment-maxsurge-quoted-count.yaml": (
        "spec.strategy.rollingUpdate.maxSurge",
        "'1' must be an integer or a percentage",
    ),
    "refused-deployment-request-above-limit.yaml": (
        "spec.template.spec.containers[0].resources.requests.cpu",
        "less than or equal to the cpu limit",
    ),
    "refused-deployment-toleration-exists-with-value.yaml": (
        "spec.template.spec.tolerations[0].value",
        "must be empty when operator is Exists",
    ),
    "refused-deployment-tolerationseconds-without-noexecute.yaml": (
        "spec.template.spec.tolerations[0].effect",
        "must be NoExecute",
    ),
    "refused-cronjob-name-53-characters.yaml": ("metadata.name", "no more than 52"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_api_servers_go_rules_refuse(name: str) -> None:
    field, words = REFUSED[name]
    with pytest.raises(InputError) as info:
        load_files([CORPUS / name])
    assert info.value.field == field
    assert words in info.value.detail
    assert info.value.file == str(CORPUS / name)
    assert info.value.obj is not None and info.value.obj.split("/")[0] in {"Deployment", "CronJob"}


def _deployment(strategy: str = "", pod: str = "") -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n"
        f"spec:\n{strategy}  selector: {{matchLabels: {{app: web}}}}\n  template:\n"
        "    metadata: {labels: {app: web}}\n    spec:\n"
        f"{pod}      containers: [{{name: web-1, image: nginx, resources: "
        "{requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1000m, memory: 1Gi}}}]\n"
    )


@pytest.mark.parametrize(
    ("strategy", "pod"),
    [
        ("", ""),
        ("  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 100%}}\n", ""),
        ("  strategy: {rollingUpdate: {maxSurge: 3, maxUnavailable: 0}}\n", ""),
        ("", "      restartPolicy: Always\n"),
        ("", "      tolerations: [{operator: Exists}, {key: k, operator: Equal, value: v}]\n"),
        ("", "      tolerations: [{key: k, effect: NoExecute, tolerationSeconds: 30}]\n"),
        ("", "      initContainers: [{name: init, image: busybox}]\n"),
    ],
)
def test_what_the_api_server_accepts_loads(strategy: str, pod: str) -> None:
    (workload,) = load_text(_deployment(strategy, pod), "ok.yaml").workloads
    assert workload.kind == "Deployment"


@pytest.mark.parametrize(
    ("strategy", "field", "words"),
    [
        ("{maxSurge: 0, maxUnavailable: 0}", "maxUnavailable", "may not be 0"),
        ("{maxUnavailable: 101%}", "maxUnavailable", "greater than 100%"),
        ("{maxSurge: -1}", "maxSurge", "greater than or equal to 0"),
    ],
)
def test_rolling_update_bounds(strategy: str, field: str, words: str) -> None:
    text = _deployment(f"  strategy: {{rollingUpdate: {strategy}}}\n")
    with pytest.raises(InputError) as info:
        load_text(text, "d.yaml")
    assert info.value.field == f"spec.strategy.rollingUpdate.{field}"
    assert words in info.value.detail


def test_a_52_character_cronjob_name_loads() -> None:
    text = (CORPUS / "refused-cronjob-name-53-characters.yaml").read_text()
    ms = load_text(text.replace("c" * 53, "c" * 52), "cj.yaml")
    assert [c.name for c in ms.cronjobs] == ["c" * 52]
