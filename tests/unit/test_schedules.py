"""deploy/: the scheduled runs (Kubernetes CronJob and sharded Job, container image, Airflow DAG,
systemd units) call the auditor as it really is. Every `auditor ...` invocation is read out of
each file and checked against the command tree of `auditor.cli.app`: the subcommand exists, each
flag is an option of that command, and click parses the arguments (types and choices). The
embedded TOML loads with the settings loader, the image is one name everywhere and its
entrypoint the console script, the shard expressions agree with the shard count, and the units
pass `systemd-analyze verify` (or, without it, an INI check)."""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from auditor.cli import app
from auditor.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CRONJOB = DEPLOY / "kubernetes" / "cronjob.yaml"
SHARDED = DEPLOY / "kubernetes" / "sharded-job.yaml"
CONTAINERFILE = DEPLOY / "container" / "Containerfile"
DAG = DEPLOY / "airflow" / "auditor_scan_dag.py"
SERVICE = DEPLOY / "systemd" / "auditor-scan.service"
TIMER = DEPLOY / "systemd" / "auditor-scan.timer"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPT = next(
    name for name, target in PYPROJECT["project"]["scripts"].items() if target == "auditor.cli:main"
)


# --------------------------------------------------------------- invocations, checked for real


# Typer builds a click command tree (recent Typer on a click of its own, typer._click, whose group
# is no click.Group): the walk below goes by what the objects do, not by their classes.


def is_group(command: Any) -> bool:
    return callable(getattr(command, "get_command", None)) and callable(
        getattr(command, "list_commands", None)
    )


def check(argv: list[str], where: str) -> Any:
    """`argv` (["auditor", "scan", "--config", ...]) against the real command tree; the leaf."""
    shown = f"{where}: {shlex.join(argv)}"
    assert Path(argv[0]).name == SCRIPT, f"{shown}: not the {SCRIPT} console script"
    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name=SCRIPT)
    rest = argv[1:]
    while is_group(command):
        if rest and rest[0].startswith("-"):  # the root's own options (--help, --version)
            assert rest[0] in _opts(command, ctx), f"{shown}: {rest[0]} is no option of `{ctx.command_path}`"
            return command
        assert rest, f"{shown}: `{ctx.command_path}` needs a subcommand"
        sub = command.get_command(ctx, rest[0])
        assert sub is not None, f"{shown}: `{ctx.command_path}` has no subcommand {rest[0]!r}"
        command, ctx, rest = sub, sub.context_class(sub, info_name=rest[0], parent=ctx), rest[1:]
    known = _opts(command, ctx)
    for token in rest:
        if token.startswith("--"):
            flag = token.split("=", 1)[0]
        elif token.startswith("-") and len(token) > 1:
            flag = token[:2]
        else:
            continue
        assert flag in known, (
            f"{shown}: {flag} is no option of `{ctx.command_path}` ({', '.join(sorted(known))})"
        )
    try:  # the parse itself, not resilient: a bad value, a missing one, an extra argument
        command.make_context(ctx.info_name, list(rest), parent=ctx.parent)
    except Exception as exc:  # click's UsageError / BadParameter (ClickException): one line
        if not callable(getattr(exc, "format_message", None)):
            raise
        raise AssertionError(f"{shown}: {exc.format_message()}") from None
    return command


def _opts(command: Any, ctx: Any) -> set[str]:
    names = {
        o
        for p in command.get_params(ctx)
        if getattr(p, "param_type_name", "") == "option"
        for o in p.opts + p.secondary_opts
    }
    return names | set(command.get_help_option_names(ctx))


SEPARATORS = {";", "&&", "||", "|", "&", ";;"}
KEYWORDS = {"exec", "then", "do", "else", "!", "time", "nohup"}


def shell_invocations(script: str) -> Iterator[list[str]]:
    """The simple commands of a shell script that run the auditor (in command position)."""
    script = script.replace("\\\n", " ")
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token not in SEPARATORS:
                command.append(token)
                continue
            while command and (command[0] in KEYWORDS or re.fullmatch(r"[A-Za-z_]\w*=\S*", command[0])):
                command.pop(0)
            if command and Path(command[0]).name == SCRIPT:
                yield command
            command = []


def k8s_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def pod_specs(path: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(workload, pod spec) of every CronJob and Job in a manifest."""
    for doc in k8s_docs(path):
        if doc["kind"] == "CronJob":
            yield doc, doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif doc["kind"] == "Job":
            yield doc, doc["spec"]["template"]["spec"]


def containers(path: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    for workload, spec in pod_specs(path):
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            yield workload, spec, container


def k8s_invocations(path: Path) -> list[tuple[list[str], dict[str, Any], dict[str, Any]]]:
    """Each `auditor` call of a manifest's containers, with its container and pod spec. Without
    `command:` the image's ENTRYPOINT (the console script) runs the `args:`."""
    found = []
    for _workload, spec, container in containers(path):
        command, args = container.get("command"), container.get("args", [])
        if command is None:
            found.append(([SCRIPT, *args], container, spec))
        elif Path(command[0]).name in ("sh", "bash") and command[1:2] == ["-c"]:
            script = command[2] if len(command) > 2 else args[0]
            found.extend((argv, container, spec) for argv in shell_invocations(script))
        else:
            found.append(([*command, *args], container, spec))
    return found


def dag_namespace(dag: Path = DAG) -> dict[str, Any]:
    """A DAG file's constants and *_command functions, compiled from its AST: no Airflow."""
    tree = ast.parse(dag.read_text(), filename=str(dag))
    keep = [
        node
        for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name.endswith("_command"))
        or (
            isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
        )
        or (isinstance(node, ast.ImportFrom) and node.module in ("__future__", "datetime"))
    ]
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(dag), "exec"), namespace)
    return namespace


def systemd_units(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file as {section: {key: [values]}} (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            assert line.endswith("]"), f"{path.name}: {raw!r}"
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and "=" in line, f"{path.name}: {raw!r} outside a section or not key=value"
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def exec_start(unit: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    return [shlex.split(v.lstrip("-@+!:")) for v in unit["Service"].get("ExecStart", [])]


# ------------------------------------------------------------------------------------- tests


def all_invocations() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for path in (CRONJOB, SHARDED):
        found += [(path.name, argv) for argv, _c, _s in k8s_invocations(path)]
    ns = dag_namespace()
    for i in range(ns["SHARDS"]):
        found += [(f"{DAG.name} shard {i}", argv) for argv in shell_invocations(ns["scan_command"](i))]
    found += [(f"{DAG.name} merge", argv) for argv in shell_invocations(ns["merge_command"]())]
    found += [(f"{DAG.name} heal", argv) for argv in shell_invocations(ns["heal_command"]())]
    found += [(SERVICE.name, argv) for argv in exec_start(systemd_units(SERVICE))]
    entrypoint, cmd = containerfile_exec("ENTRYPOINT"), containerfile_exec("CMD")
    found.append((CONTAINERFILE.name, [*entrypoint, *cmd]))
    return found


def test_every_auditor_invocation_is_a_real_command_line() -> None:
    found = all_invocations()
    commands = {}
    for where, argv in found:
        commands.setdefault(where.split()[0], set()).add(check(argv, where).name)
    # each file calls what it is for (nothing was silently missed by the extraction)
    assert commands[CRONJOB.name] == {"scan"}
    assert commands[SHARDED.name] == {"scan", "merge"}
    assert commands[DAG.name] == {"scan", "merge", "heal"}
    assert commands[SERVICE.name] == {"scan"}
    assert CONTAINERFILE.name in commands


@pytest.mark.parametrize(
    "argv",
    [
        ["auditor", "scann", "--config", "x.toml"],
        ["auditor", "scan", "--metric-file", "m.prom"],
        ["auditor", "scan", "--format", "yaml"],
        ["auditor", "scan", "-x"],
        ["auditor", "report", "merge", "--shard", "0/4", "a.json"],
        ["auditor", "report", "merge"],
        ["auditor", "scan", "--confirm", "soon"],
        ["auditor", "report"],
        ["datahub-auditor", "scan"],
    ],
)
def test_the_check_catches_what_is_wrong(argv: list[str]) -> None:
    with pytest.raises(AssertionError, match="broken: "):
        check(argv, "broken")


def test_the_shell_reading_finds_commands_not_words() -> None:
    script = (
        "stamp=$(date -u +%Y)\nmkdir -p /var/lib/auditor && auditor scan --shard $(JOB_COMPLETION_INDEX)/4 "
        "-o /r/s-$(JOB_COMPLETION_INDEX).json; rc=$?\n"
        "case $rc in 0|1|4) exit 0 ;; esac\nAUDITOR_X=1 exec /opt/a/bin/auditor \\\n  report merge a.json # c"
    )
    assert list(shell_invocations(script)) == [
        [
            "auditor",
            "scan",
            "--shard",
            "$(JOB_COMPLETION_INDEX)/4",
            "-o",
            "/r/s-$(JOB_COMPLETION_INDEX).json",
        ],
        ["/opt/a/bin/auditor", "report", "merge", "a.json"],
    ]


def test_embedded_toml_loads_and_the_mounts_match(tmp_path: Path) -> None:
    """Every TOML in a ConfigMap loads (unknown keys are refused); every --config names a file
    of a ConfigMap mounted at its folder."""
    maps = {}
    for path in (CRONJOB, SHARDED):
        for doc in k8s_docs(path):
            if doc["kind"] == "ConfigMap":
                maps[doc["metadata"]["name"]] = doc["data"]
    tomls = [
        (name, key, text)
        for name, data in maps.items()
        for key, text in data.items()
        if key.endswith(".toml")
    ]
    assert tomls
    for name, key, text in tomls:
        file = tmp_path / key
        file.write_text(text)
        s = load_settings(file, env={})
        assert s.store_url is not None and s.search_url, f"{name}/{key}"
        assert "password" not in text.replace("EBEAN_DATASOURCE_PASSWORD", "").lower().split("#")[0]
    configs = 0
    for path in (CRONJOB, SHARDED):
        for argv, container, spec in k8s_invocations(path):
            if "--config" not in argv:
                continue
            configs += 1
            wanted = Path(argv[argv.index("--config") + 1])
            volumes = {v["name"]: v for v in spec["volumes"]}
            mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(wanted.parent))
            source = volumes[mount["name"]]["configMap"]["name"]
            assert wanted.name in maps[source], f"{path.name}: {wanted} is not in ConfigMap {source}"
    assert configs >= 2


def containerfile_exec(instruction: str) -> list[str]:
    lines = [line for line in CONTAINERFILE.read_text().splitlines() if line.startswith(f"{instruction} ")]
    assert len(lines) == 1, f"one {instruction} in the Containerfile"
    value = json.loads(lines[0][len(instruction) + 1 :])  # the exec form: a JSON list
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return value


def image_name() -> str:
    """The tag the Containerfile says to build (`-t NAME`), the same in every build line."""
    tags = set(re.findall(r"\bbuild\b.*?-t (\S+)", CONTAINERFILE.read_text()))
    assert len(tags) == 1, tags
    return tags.pop()


def test_the_image_entrypoint_is_the_console_script_and_one_name_everywhere() -> None:
    assert containerfile_exec("ENTRYPOINT") == [SCRIPT]
    image = image_name()
    assert image.rsplit(":", 1)[1] == PYPROJECT["project"]["version"]
    used = {c["image"] for path in (CRONJOB, SHARDED) for _w, _s, c in containers(path)}
    assert used == {image}, used
    # the image runs as the user the pods ask for
    user = re.search(r"^USER (\d+):(\d+)$", CONTAINERFILE.read_text(), re.MULTILINE)
    assert user, "USER uid:gid in the Containerfile"
    for path in (CRONJOB, SHARDED):
        for _w, spec in pod_specs(path):
            ctx = spec["securityContext"]
            assert (str(ctx["runAsUser"]), str(ctx["runAsGroup"])) == user.groups(), path.name
    # it copies what the wheel is built from: pyproject.toml, the readme, every mapped folder
    text = CONTAINERFILE.read_text()
    folders = {"auditor", *PYPROJECT["tool"]["setuptools"]["package-dir"].values()}
    for needed in ("pyproject.toml", PYPROJECT["project"]["readme"], *folders):
        assert re.search(rf"^COPY .*\b{re.escape(needed)}\b", text, re.MULTILINE), needed


def shard_of(argv: list[str]) -> tuple[str, int]:
    index, total = argv[argv.index("--shard") + 1].split("/")
    return index, int(total)


def test_the_sharded_job_agrees_with_itself() -> None:
    jobs = {doc["metadata"]["name"]: doc for doc in k8s_docs(SHARDED) if doc["kind"] == "Job"}
    indexed = [j for j in jobs.values() if j["spec"].get("completionMode") == "Indexed"]
    assert len(indexed) == 1
    spec = indexed[0]["spec"]
    n = spec["completions"]
    assert 1 <= spec["parallelism"] <= n
    calls = [argv for argv, _c, _s in k8s_invocations(SHARDED)]
    plans = [a for a in calls if a[1] == "scan" and "--plan-shards" in a]
    scans = [a for a in calls if a[1] == "scan" and "--plan-shards" not in a]
    merges = [a for a in calls if a[1:3] == ["report", "merge"]]
    assert len(scans) == 1 and len(merges) == 1 and len(plans) == 1
    index, total = shard_of(scans[0])
    assert (index, total) == ("$(JOB_COMPLETION_INDEX)", n)
    # one plan of N shards, linked where every shard reads it
    assert int(plans[0][plans[0].index("--plan-shards") + 1]) == n
    plan_file = scans[0][scans[0].index("--shard-plan") + 1]
    (init,) = [c for _w, _s, c in containers(SHARDED) if c["name"] == "shard-plan"]
    assert f"ln {plans[0][plans[0].index('-o') + 1]} {plan_file}" in init["args"][0]
    out = scans[0][scans[0].index("-o") + 1]
    assert "$(JOB_COMPLETION_INDEX)" in out and "-f" in scans[0]
    # the merge reads what the shards wrote, and waits for exactly the N of them
    assert any(Path(out.replace("$(JOB_COMPLETION_INDEX)", "*")) == Path(a) for a in merges[0][3:]), merges
    waits = [c for _w, _s, c in containers(SHARDED) if c["name"].startswith("wait")]
    assert len(waits) == 1
    loop = re.search(r"for i in ([\d ]+); do", waits[0]["args"][0])
    assert loop and [int(i) for i in loop.group(1).split()] == list(range(n))
    assert out.replace("$(JOB_COMPLETION_INDEX)", "$i") in waits[0]["args"][0]


def test_the_dag_runs_every_shard_then_the_merge() -> None:
    ns = dag_namespace()
    n = ns["SHARDS"]
    shards = [next(shell_invocations(ns["scan_command"](i))) for i in range(n)]
    assert [shard_of(a) for a in shards] == [(str(i), n) for i in range(n)]
    outputs = [a[a.index("--output") + 1] for a in shards]
    merge = next(shell_invocations(ns["merge_command"]()))
    pattern = merge[3]
    assert merge[4].startswith("-") and all(fnmatch.fnmatchcase(o, pattern) for o in outputs), (
        outputs,
        pattern,
    )
    assert len(set(outputs)) == n
    # every shard reads the plan the plan task writes, of SHARDS shards
    plan = [a for a in shell_invocations(ns["plan_command"]()) if a[:2] == ["auditor", "scan"]]
    assert len(plan) == 1 and int(plan[0][plan[0].index("--plan-shards") + 1]) == n
    assert {a[a.index("--shard-plan") + 1] for a in shards} == {ns["PLAN"]}
    assert f"mv {plan[0][plan[0].index('--output') + 1]} {ns['PLAN']}" in ns["plan_command"]()
    # the wiring, read from the AST: one task per shard over range(SHARDS), then `>> merge`
    tree = ast.parse(DAG.read_text())
    source = ast.unparse(tree)
    assert "for i in range(SHARDS)" in source and "scan_command(i)" in source
    assert any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.RShift) for n in ast.walk(tree))
    imported = {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert imported <= {"__future__", "datetime", "importlib", "airflow"}, imported


def test_the_systemd_units_hold_what_they_must() -> None:
    service, timer = systemd_units(SERVICE), systemd_units(TIMER)
    s = {k: v[-1] for k, v in service["Service"].items()}
    assert s["Type"] == "oneshot"
    assert set(s["SuccessExitStatus"].split()) == {"1", "4", "5", "9"}  # results, not failures (see the unit)
    assert "2" in s.get("RestartPreventExitStatus", "").split()
    assert "LoadCredential" in s or "EnvironmentFile" in s
    if "LoadCredential" in s:  # the auditor reads the credential's file through a *_FILE variable
        name = s["LoadCredential"].split(":", 1)[0]
        env = dict(v.split("=", 1) for v in service["Service"]["Environment"])
        assert any(k.endswith("_PASSWORD_FILE") and v == f"%d/{name}" for k, v in env.items()), env
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "CapabilityBoundingSet": "",
    }.items():
        assert s.get(key) == value, key
    (argv,) = exec_start(service)
    for flag in ("--state-file", "--metrics-file", "--output"):
        path = argv[argv.index(flag) + 1]
        writable = [f"/var/lib/{d}" for d in s["StateDirectory"].split()] + s.get(
            "ReadWritePaths", ""
        ).split()
        assert any(path.startswith(w + "/") for w in writable), (
            f"{flag} {path} is not writable under ProtectSystem"
        )
    t = {k: v[-1] for k, v in timer["Timer"].items()}
    assert t["OnCalendar"] and t["Persistent"] in {"true", "yes", "1", "on"}
    assert t.get("Unit", SERVICE.name) == SERVICE.name and TIMER.stem == SERVICE.stem
    assert timer["Install"]["WantedBy"] == ["timers.target"]


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not on this machine")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    """`systemd-analyze verify`: no error and no warning (an unknown key is only a warning). The
    ExecStart binary is pointed at this venv's console script, which exists here."""
    here = str(Path(sys.executable).with_name(SCRIPT))
    for unit in (SERVICE, TIMER):
        text = unit.read_text()
        if unit == SERVICE:
            (argv,) = exec_start(systemd_units(SERVICE))
            text = text.replace(argv[0], here)
        (tmp_path / unit.name).write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", f"./{SERVICE.name}", f"./{TIMER.name}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr
    exposure = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--threshold=20", f"./{SERVICE.name}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exposure.returncode == 0, exposure.stdout[-3000:] + exposure.stderr


def test_the_heal_units_run_a_real_heal_hardened_as_the_scan_and_fail_on_a_refusal() -> None:
    heal, timer = (
        systemd_units(DEPLOY / "systemd" / "auditor-heal.service"),
        DEPLOY / "systemd" / "auditor-heal.timer",
    )
    (argv,) = exec_start(heal)
    assert check(argv, "auditor-heal.service").name == "heal" and "--policy" in argv
    h = {k: v[-1] for k, v in heal["Service"].items()}
    s = {k: v[-1] for k, v in systemd_units(SERVICE)["Service"].items()}
    assert "11" not in h["SuccessExitStatus"].split() and "11" in h["RestartPreventExitStatus"].split()
    same = ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "CapabilityBoundingSet",
            "LoadCredential", "StateDirectory", "ReadWritePaths", "SystemCallFilter", "UMask")  # fmt: skip
    for key in same:
        assert h.get(key) == s.get(key), key
    t = {k: v[-1] for k, v in systemd_units(timer)["Timer"].items()}
    assert t["Unit"] == "auditor-heal.service" and t["Persistent"] == "true"


@pytest.mark.parametrize("rc", [0, 1, 5, 9, 11, 2, 3, 6, 8])
def test_the_dag_s_heal_task_fails_on_a_refusal_and_is_off_without_a_policy(rc: int, tmp_path: Path) -> None:
    """The heal task's own shell, run by bash with a stand-in `auditor` that exits `rc`: 11 (a
    guard refused) fails the task (Airflow alerts), 0 succeeds; without the Variable it is skipped
    (BashOperator's skip code) and nothing runs."""
    ns = dag_namespace()
    stub = tmp_path / "bin" / SCRIPT
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/called\nexit {rc}\n')
    stub.chmod(0o755)
    reports = tmp_path / "reports"

    def run(policy: str) -> tuple[int, str]:
        script = ns["heal_command"]().replace(ns["HEAL_POLICY"], policy).replace("{{ts_nodash}}", "")
        script = script.replace(ns["REPORTS"].replace("{{ts_nodash}}", ""), f"{reports}/")
        env = {"PATH": f"{stub.parent}:/usr/bin:/bin"}
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30)
        called = tmp_path / "called"
        said = called.read_text() if called.exists() else ""
        called.unlink(missing_ok=True)
        return done.returncode, said

    code, said = run("/etc/auditor/heal.toml")
    assert (
        said.split()[:3] == ["heal", "--config", ns["CONFIG"]] and "--policy /etc/auditor/heal.toml" in said
    )
    assert code == (0 if rc in (0, 1, 5, 9) else rc)
    assert run("") == (ns["SKIPPED"], "")  # no policy: skipped, the auditor never ran
    # the wiring, read from the AST: after the merge whatever it said, skipped on SKIPPED, no retry
    heal = next(
        n
        for n in ast.walk(ast.parse(DAG.read_text()))
        if isinstance(n, ast.Call)
        and any(k.arg == "task_id" and ast.literal_eval(k.value) == "heal" for k in n.keywords)
    )
    keywords = {k.arg: ast.unparse(k.value) for k in heal.keywords}
    assert keywords["bash_command"] == "heal_command()" and keywords["skip_on_exit_code"] == "SKIPPED"
    assert keywords["trigger_rule"] == "'all_done'" and keywords["retries"] == "0"
    assert "merge >> heal" in ast.unparse(ast.parse(DAG.read_text()))
