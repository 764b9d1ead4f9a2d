"""deploy/kubernetes/console.yaml: the console's Deployment calls `auditor serve` as it really is
(checked against the command tree, as test_schedules.py checks the scheduled runs), is safe as
deployed (a token beyond loopback, from a mounted Secret; read-only everywhere), and its probes,
ports, Service, ConfigMap, reports folder and image agree with the rest of deploy/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_schedules import CRONJOB, SCRIPT, check, image_name, k8s_docs

from auditor.serve.app import OPEN_PATHS, Guard
from auditor.serve.run import check_exposure

CONSOLE = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "console.yaml"


def docs() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in k8s_docs(CONSOLE)}


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_the_console_is_a_real_serve_command_safe_as_deployed() -> None:
    deployment = docs()["Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert "command" not in container  # the image's ENTRYPOINT, the console script, runs the args
    argv = [SCRIPT, *container["args"]]
    assert check(argv, CONSOLE.name).name == "serve"
    assert container["image"] == image_name()
    host = option(argv, "--host") or "127.0.0.1"
    token_file = option(argv, "--token-file")
    check_exposure(host, Guard(token_file, option(argv, "--trusted-proxy-header")))
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    if token_file:  # the token from a Secret mounted at its folder, never a literal
        mount = mounts[str(Path(token_file).parent)]
        assert "secret" in volumes[mount["name"]] and mount["readOnly"] is True
    assert all(m.get("readOnly") for path, m in mounts.items() if path != "/tmp"), (
        "the console writes nothing"
    )
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # the configuration is the CronJob's ConfigMap, mounted where --config says
    config = Path(option(argv, "--config") or "")
    source = volumes[mounts[str(config.parent)]["name"]]["configMap"]["name"]
    cron = {d["kind"]: d for d in k8s_docs(CRONJOB)}
    assert source == cron["ConfigMap"]["metadata"]["name"] and config.name in cron["ConfigMap"]["data"]
    # the reports folder is where the CronJob writes them, on the same claim
    reports = option(argv, "--reports")
    assert reports is not None and f"--output {reports}/scan-" in str(cron["CronJob"])
    claim = volumes[mounts["/var/lib/auditor"]["name"]]["persistentVolumeClaim"]["claimName"]
    assert claim == cron["PersistentVolumeClaim"]["metadata"]["name"]


def test_the_probes_ports_and_service_agree() -> None:
    found = docs()
    deployment, service = found["Deployment"], found["Service"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    argv = [SCRIPT, *container["args"]]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["http"] == int(option(argv, "--port") or 8080)
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path and path in OPEN_PATHS and get["port"] in ports  # no token needed
    assert container["readinessProbe"]["timeoutSeconds"] > 5  # /readyz gives a backend 5 s
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= set(ports)
