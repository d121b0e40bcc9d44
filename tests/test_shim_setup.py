"""shim/gwtrace_setup.sh: the glidein custom script, run as glidein_startup.sh runs one.

A fake glidein directory follows the real contract: glidein_config with
ADD_CONFIG_LINE_SOURCE, ERROR_GEN_PATH and CONDOR_VARS_FILE; the stand-ins in
tests/data/shim/ are written to glideinWMS's add_config_line.source and
error_gen.sh; the script runs as ``gwtrace_setup.sh glidein_config main`` in
the glidein's directory; condor_job_wrapper.sh is generated the way
condor_startup.sh generates it (``exec $GLIDEIN_WRAPPER_EXEC``); the clean-up
script runs last, as glidein_exit runs .gwms.d/exec/cleanup.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipapp
from pathlib import Path
from typing import Dict

import pytest

from conftest import REPO, clean_env

import gwtrace
from opentelemetry.proto.trace.v1.trace_pb2 import Status

DATA = REPO / "tests" / "data" / "shim"
SHIPPED = [REPO / "shim" / "gwtrace_setup.sh", REPO / "shim" / "gwtrace-job-wrapper", REPO / "bash" / "gwtrace.sh"]


def launcher_pyz(target: Path) -> Path:
    """Stands in for dist/gwtrace-sidecar.pyz (test_shim_pyz.py tests the real
    one): a zipapp that runs the gwtrace installed in this interpreter."""
    src = target.parent / "launcher"
    src.mkdir()
    # The set-up runs the archive with -I -S, as the real one runs itself: the paths of this
    # interpreter's gwtrace and packages are given explicitly.
    paths = [str(Path(gwtrace.__file__).resolve().parent.parent), sysconfig.get_paths()["purelib"]]
    (src / "__main__.py").write_text(f"import sys\nsys.path[:0] = {paths!r}\n"
                                     "from gwtrace.cli import main\nsys.exit(main())\n")
    zipapp.create_archive(src, target)
    return target


@pytest.fixture
def glidein(tmp_path: Path) -> Dict[str, Path]:
    base = tmp_path / "glide_abc123"
    main = base / "main"
    main.mkdir(parents=True)
    (base / ".gwms.d" / "exec" / "cleanup").mkdir(parents=True)
    for path in SHIPPED:
        shutil.copy2(path, main / path.name)
    launcher_pyz(main / "gwtrace-sidecar.pyz")
    shutil.copy2(DATA / "add_config_line.source", base / "add_config_line.source")
    shutil.copy2(DATA / "error_gen.sh", main / "error_gen.sh")
    # A stand-in for GlideinWMS's error_augment.sh (glidein_startup.sh runs it around every script).
    (main / "error_augment.sh").write_text("#!/bin/bash\n# stand-in: the glidein's per-script XML result\nexit 0\n")
    (main / "error_augment.sh").chmod(0o755)
    (main / "condor_vars.lst").write_text('GLIDEIN_WRAPPER_EXEC S \\"\\\\\\$@\\" + N N -\n')
    config = base / "glidein_config"
    config.write_text(
        "# --- glidein_startup vals ---\n"
        "GLIDEIN_UUID 1b0c3f7e-1111-2222-3333-444455556666\n"
        "GLIDEIN_Factory OSG\nGLIDEIN_Name gfactory_instance\n"
        "GLIDEIN_Entry_Name CMSHTPC_T2_Test\nGLIDEIN_Site Test_Site\n"
        f"GLIDEIN_WORK_DIR {main}\n"
        f"ADD_CONFIG_LINE_SOURCE {base / 'add_config_line.source'}\n"
        f"ERROR_GEN_PATH {main / 'error_gen.sh'}\n"
        f"CONDOR_VARS_FILE {main / 'condor_vars.lst'}\n"
        "GLIDEIN_TRACEPARENT 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n")
    return {"base": base, "main": main, "config": config}


def gconfig(config: Path, key: str) -> str:
    value = ""
    for line in config.read_text().splitlines():
        if line.startswith(key + " "):
            value = line[len(key) + 1:]
    return value


def setup_env(**extra: str) -> Dict[str, str]:
    env = clean_env(**extra)
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"     # python3 = this interpreter
    return env


def run_setup(glidein: Dict[str, Path], env: Dict[str, str]) -> subprocess.CompletedProcess:
    """Run the set-up script as a glidein does: its stderr is the glidein's .err,
    a file (the sidecar keeps it open to ship spans home there at the end, so a
    pipe would not see EOF until the sidecar stops)."""
    err = glidein["base"] / "job.err"
    with open(err, "a") as stderr:
        done = subprocess.run(["bash", str(glidein["main"] / "gwtrace_setup.sh"), str(glidein["config"]), "main"],
                              cwd=glidein["base"], env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
                              timeout=90)
    done.stderr = err.read_text()
    return done


def result(glidein: Dict[str, Path]) -> Dict[str, str]:
    xml = (glidein["base"] / "otrb_output.xml").read_text()
    status = re.search(r"<status>(\w+)</status>", xml).group(1)
    metrics = dict(re.findall(r'<metric name="([^"]+)"[^>]*>([^<]*)</metric>', xml))
    return dict(metrics, status=status)


def condor_job_wrapper(glidein: Dict[str, Path]) -> Path:
    """As condor_startup.sh writes it: a #!/bin/sh header, the wrapper pieces
    (none here), then ``exec $GLIDEIN_WRAPPER_EXEC`` with the glidein_config value."""
    value = gconfig(glidein["config"], "GLIDEIN_WRAPPER_EXEC")
    path = glidein["base"] / "condor_job_wrapper.sh"
    path.write_text(f"#!/bin/sh\n\n# Condor job wrappers must replace its own image\nexec {value}\n")
    path.chmod(0o755)
    return path


def job_environment(glidein: Dict[str, Path]) -> Dict[str, str]:
    """STARTER_JOB_ENVIRONMENT: the condor_vars rows with a user job name ('+')."""
    env = {"PATH": "/usr/bin:/bin"}
    for row in (glidein["main"] / "condor_vars.lst").read_text().splitlines():
        fields = row.split()
        if len(fields) == 7 and fields[6] == "+":
            env[fields[0]] = gconfig(glidein["config"], fields[0])
    return env



def run_later_validation_script(glidein: Dict[str, Path]) -> None:
    """A later validation script instrumented with the library the setup script gave it, as the docs say."""
    later = glidein["main"] / "validate_node.sh"
    later.write_text('#!/bin/bash\nglidein_config=$1\n'
                     'source "$(grep -m1 "^ADD_CONFIG_LINE_SOURCE " "$glidein_config" | cut -d " " -f 2-)"\n'
                     'export GWTRACE_SOCKET=$(gconfig_get GWTRACE_SOCKET) TRACEPARENT=$(gconfig_get TRACEPARENT)\n'
                     'source "$(gconfig_get GWTRACE_LIB)"\n'
                     'trace_begin validate_node.sh\ntrace_run check_tmp test -d /tmp\ntrace_end\n')
    assert subprocess.run(["bash", str(later), str(glidein["config"]), "main"], cwd=glidein["base"],
                          env=clean_env(), timeout=30).returncode == 0


def test_traces_the_glidein_its_scripts_and_its_jobs(glidein, receiver) -> None:
    config = glidein["config"]
    with config.open("a") as f:
        f.write(f"GWTRACE_OTLP_TRACES_ENDPOINT {receiver.endpoint}\nGWTRACE_JOB_SERVICE_NAME cms-analysis\n")
    out = run_setup(glidein, setup_env(OTEL_EXPORTER_OTLP_TIMEOUT="2000"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == ""
    assert result(glidein)["status"] == "OK" and result(glidein)["GWTrace"] == "on"

    for key in ("GWTRACE_DIR", "GWTRACE_SOCKET", "GWTRACE_SIDECAR_PID", "GWTRACE_BOOT_US", "GWTRACE_LIB",
                "GWTRACE_PYTHON", "GWTRACE_PYZ", "GWTRACE_GLIDEIN_TRACEPARENT", "TRACEPARENT"):
        assert gconfig(config, key), key
    sidecar_dir = Path(gconfig(config, "GWTRACE_DIR"))
    assert sidecar_dir.stat().st_mode & 0o077 == 0
    rows = (glidein["main"] / "condor_vars.lst").read_text()
    for key in ("GWTRACE_DIR", "GWTRACE_SOCKET", "GWTRACE_BOOT_US", "GWTRACE_GLIDEIN_TRACEPARENT"):
        assert f"{key} S - + N N +" in rows
    assert gconfig(config, "GLIDEIN_WRAPPER_EXEC") == f'"{glidein["main"] / "gwtrace-job-wrapper"}" "$@"'
    assert "REG" in (glidein["base"] / "glidein_config.history").read_text()

    # A later validation script, instrumented with the library it was given, run as
    # glidein_startup.sh runs it: error_augment.sh (now with the step hook) before and after.
    augment = glidein["main"] / "error_augment.sh"
    assert "gwtrace step hook" in augment.read_text() and augment.read_text().endswith("exit 0\n")
    hook = [str(augment)]
    assert subprocess.run(hook + ["-init"], cwd=glidein["base"], env=clean_env(), timeout=30).returncode == 0
    run_later_validation_script(glidein)
    assert subprocess.run(hook + ["-process", "0", "main/validate_node.sh", str(glidein["base"]), "cmd", "1", "2"],
                          cwd=glidein["base"], env=clean_env(), timeout=30).returncode == 0

    # A user job, through condor_job_wrapper.sh as the glidein's condor would run it.
    ad = glidein["base"] / ".job.ad"
    ad.write_text('ClusterId = 88\nProcId = 0\nOwner = "carol"\nGlobalJobId = "submit#88.0#1"\n')
    job_env = dict(job_environment(glidein), _CONDOR_JOB_AD=str(ad))
    job = subprocess.run(["sh", str(condor_job_wrapper(glidein)), "/bin/sh", "-c", 'echo "$TRACEPARENT"; exit 4'],
                         env=job_env, capture_output=True, text=True, timeout=30)
    assert job.returncode == 4

    # The glidein ends: its clean-up scripts run in name order, ours first and last.
    cleanup = glidein["base"] / ".gwms.d" / "exec" / "cleanup"
    assert sorted(p.name for p in cleanup.iterdir()) == ["0-gwtrace-begin.sh", "zz-gwtrace-end.sh"]
    for hook in sorted(cleanup.iterdir()):
        assert subprocess.run([str(hook), str(config)], env=clean_env(), timeout=120).returncode == 0
    assert not os.path.exists(sidecar_dir / "sidecar.pid")

    spans = {s.name: s for s in receiver.spans}
    assert set(spans) >= {"glidein", "main/validate_node.sh", "validate_node.sh", "check_tmp", "user_job", "cleanup"}
    root = spans["glidein"]
    assert root.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" and root.parent_id == "00f067aa0ba902b7"
    assert root.status_code == Status.STATUS_CODE_OK and not root.attributes.get("gwtrace.incomplete")
    assert root.attributes["glidein.exit_code"] == 0
    assert root.resource["glidein.site"] == "Test_Site" and root.resource["service.instance.id"].startswith("1b0c3f7e")
    for name in ("main/validate_node.sh", "validate_node.sh", "cleanup"):
        assert spans[name].parent_id == root.span_id, name
    step = spans["main/validate_node.sh"]                 # the hook's span: the script as the glidein ran it
    assert step.start_ns <= spans["validate_node.sh"].start_ns and step.end_ns >= spans["validate_node.sh"].end_ns
    assert step.attributes["process.exit.code"] == 0 and step.status_code == Status.STATUS_CODE_OK
    # User jobs are children of HTCondor's span (its id published before HTCondor starts).
    condor = gconfig(config, "GWTRACE_GLIDEIN_TRACEPARENT").split("-")
    assert condor[1] == root.trace_id and spans["user_job"].parent_id == condor[2] != root.span_id
    assert spans["check_tmp"].parent_id == spans["validate_node.sh"].span_id
    assert spans["user_job"].attributes["htcondor.job.id"] == "88.0"
    assert spans["user_job"].attributes["process.exit.code"] == 4
    # the job's span has the job's service name (GWTRACE_JOB_SERVICE_NAME), the glidein's identity kept
    assert root.resource["service.name"] == "glidein" and spans["user_job"].resource["service.name"] == "cms-analysis"
    assert spans["user_job"].resource["glidein.site"] == "Test_Site"
    assert job.stdout.strip() == f"00-{root.trace_id}-{spans['user_job'].span_id}-01"


def test_tracing_trouble_never_fails_the_glidein(glidein, tmp_path: Path) -> None:
    tools = tmp_path / "tools"             # a node without python3
    tools.mkdir()
    for tool in ("bash", "grep", "cut", "tac", "mv", "cp", "rm", "dirname", "date", "head", "tr", "cat", "mkdir", "chmod"):
        (tools / tool).symlink_to(shutil.which(tool))
    out = run_setup(glidein, dict(clean_env(), PATH=str(tools)))
    assert out.returncode == 0
    assert result(glidein) == {"status": "OK", "GWTrace": "off", "GWTraceReason": "no python3 >= 3.9"}
    assert gconfig(glidein["config"], "GWTRACE_DIR") == ""
    assert "tracing off: no python3 >= 3.9" in out.stderr

    (glidein["main"] / "gwtrace-sidecar.pyz").unlink()
    out = run_setup(glidein, setup_env())
    assert out.returncode == 0 and result(glidein)["GWTraceReason"] == "gwtrace-sidecar.pyz not found"

    with glidein["config"].open("a") as f:
        f.write("GWTRACE_DISABLE 1\n")
    out = run_setup(glidein, setup_env())
    assert out.returncode == 0 and result(glidein)["GWTraceReason"] == "GWTRACE_DISABLE is set"


def test_a_damaged_archive_is_reported_not_fatal(glidein) -> None:
    """A corrupt .pyz says GWTrace=off with the reason; it is never "on" and then loses the spans."""
    broken = glidein["main"] / "gwtrace-sidecar.pyz"
    good = broken.read_bytes()
    broken.write_bytes(b"not a zip file")
    out = run_setup(glidein, setup_env())
    assert out.returncode == 0
    res = result(glidein)
    assert res["status"] == "OK" and res["GWTrace"] == "off"
    assert res["GWTraceReason"].startswith("gwtrace-sidecar.pyz: not a readable archive"), res
    # A damaged member inside an archive that still opens: its CRC gives it away.
    member = good.index(b"from gwtrace.cli import main")
    broken.write_bytes(good[:member] + b"X" + good[member + 1:])
    out = run_setup(glidein, setup_env())
    assert out.returncode == 0
    res = result(glidein)
    assert res["GWTrace"] == "off" and res["GWTraceReason"].startswith("gwtrace-sidecar.pyz: "), res
    assert gconfig(glidein["config"], "GWTRACE_DIR") == ""


def test_a_sidecar_that_cannot_start_is_reported_not_fatal(glidein) -> None:
    launcher = glidein["main"] / "launcher"
    (launcher / "__main__.py").write_text("import sys\nsys.exit('gwtrace: cannot start here')\n")
    zipapp.create_archive(launcher, glidein["main"] / "gwtrace-sidecar.pyz")
    out = run_setup(glidein, setup_env())
    assert out.returncode == 0
    res = result(glidein)
    assert res["status"] == "OK" and res["GWTrace"] == "off"
    assert res["GWTraceReason"].startswith("sidecar did not start"), res


def test_shellcheck_clean() -> None:
    if not shutil.which("shellcheck"):  # pragma: no cover
        pytest.skip("shellcheck not installed")
    out = subprocess.run(["shellcheck", str(REPO / "shim" / "gwtrace_setup.sh")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
