"""Nothing lost: outbox retries, rejections, the cap, ship-home and ingest."""

import os
import signal
import socket
import subprocess
import time
from collections import Counter

import pytest

from conftest import GWTRACE, LIB, REPO, clean_env, run_bash

from gwtrace.wire.blocks import BadBlock, Block, find_blocks, frame

SHIP_SPOOL = REPO / "shim" / "gwtrace-ship-spool"


def spans_script(n: int, prefix: str = "s") -> str:
    return f"for ((i=0;i<{n};i++)); do trace_begin {prefix}$i k=$i; trace_end; done"


def dead_endpoint() -> str:
    """An address where nothing listens (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1/traces"


def ingest(env, *args):
    return subprocess.run([GWTRACE, "ingest", *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=120)


def test_rejected_batches_are_set_aside_counted_and_not_retried(sidecar, receiver):
    receiver.script = [(400, {})]
    env = sidecar.start()
    run_bash(spans_script(3, "first"), env)
    deadline = time.monotonic() + 60                 # the first batch meets the 400 (a load-proof wait,
    while receiver.requests < 1 and time.monotonic() < deadline:   # not a fixed sleep)
        time.sleep(0.02)
    assert receiver.requests == 1
    run_bash(spans_script(3, "second"), env)
    sidecar.stop()
    names = {s.name for s in receiver.wait_for(3)}
    assert names == {"second0", "second1", "second2"}
    st = sidecar.status()
    assert st["spans_rejected"] == "3" and st["spans_dropped"] == "3" and st["spans_pending"] == "0"
    assert any(name.endswith(".rejected-http_400") for name in os.listdir(sidecar.dir / "outbox"))
    assert receiver.requests == 2                    # the refused batch was not sent again


def test_retry_after_is_honoured(sidecar, receiver):
    receiver.script = [(429, {"Retry-After": "3"})]
    env = sidecar.start()
    t0 = time.monotonic()
    run_bash(spans_script(5), env)
    spans = receiver.wait_for(5, timeout=30)
    elapsed = time.monotonic() - t0
    sidecar.stop()
    assert len(spans) == 5
    assert elapsed >= 2.5                            # waited for Retry-After, not hammered
    assert int(sidecar.status()["spans_retried"]) >= 5


def test_outbox_cap_drops_the_oldest_and_counts_them(sidecar):
    sidecar.env.update(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=dead_endpoint(), GWTRACE_OUTBOX_MAX_MB="0.02",
                       GWTRACE_STOP_TIMEOUT="1")
    env = sidecar.start()
    run_bash(spans_script(1500), env)
    out = sidecar.stop()
    st = sidecar.status()
    dropped, pending = int(st["spans_dropped_outbox_cap"]), int(st["spans_pending"])
    assert dropped > 0 and dropped + pending == 1500, st
    assert st["spans_dropped"] == str(dropped)
    assert f"spans_dropped_outbox_cap={dropped}" in out.stderr
    log = (sidecar.dir / "sidecar.log").read_text()
    assert log.count("over GWTRACE_OUTBOX_MAX_MB") == 1          # one warning line
    size = sum(p.stat().st_size for p in (sidecar.dir / "outbox").glob("*.json"))
    assert size <= 0.02 * 1024 * 1024


def test_collector_down_for_the_whole_run_then_ship_home_and_ingest(sidecar, receiver, tmp_path):
    sidecar.env.update(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=dead_endpoint(), GWTRACE_STOP_TIMEOUT="1")
    env = sidecar.start()
    run_bash("trace_begin glidein; " + spans_script(700) + "; trace_end", env)
    err_file = tmp_path / "job.1.0.err"
    err_file.write_text("=== Encoded XML description of glidein activity ===\nnot ours\n")
    out = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(sidecar.dir), "--ship-to", str(err_file)],
                         env=sidecar.env, capture_output=True, text=True, timeout=120)
    sidecar.pid = None
    assert out.returncode == 0, out.stderr
    assert "spans_shipped=701" in out.stderr and "spans_pending=0" in out.stderr
    blocks = list(find_blocks(err_file.read_bytes()))
    assert blocks and all(isinstance(b, Block) and b.kind == "otlp" for b in blocks)
    assert sum(int(b.meta["spans"]) for b in blocks) == 701
    # On the factory: ingest forwards them to a collector that works.
    fenv = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "f"))
    first = ingest(fenv, tmp_path)
    assert first.returncode == 0, first.stderr
    spans = receiver.wait_for(701)
    assert Counter(s.name for s in spans) == Counter(["glidein"] + [f"s{i}" for i in range(700)])
    assert spans[0].resource["service.name"] == "glidein"
    again = ingest(fenv, err_file)                    # idempotent
    assert again.returncode == 0 and f"{len(blocks)} already ingested" in again.stderr
    time.sleep(0.3)
    assert len(receiver.spans) == 701


def test_corrupt_and_truncated_blocks_are_reported_and_skipped(tmp_path):
    good = frame("events", b"gw1\tB\t1700000000.000001\t1\t4bf92f3577b34da6a3ce929d0e0e4736\t"
                           b"00f067aa0ba902b7\t-\t0\t01\t-\tok_span\n"
                           b"gw1\tE\t1700000000.000002\t1\t4bf92f3577b34da6a3ce929d0e0e4736\t00f067aa0ba902b7\t0\n")
    corrupt = frame("otlp", os.urandom(3000), spans=1)
    lines = corrupt.splitlines()
    lines[2] = lines[2][:10] + ("A" if lines[2][10] != "A" else "B") + lines[2][11:]
    truncated = frame("otlp", os.urandom(3000), spans=1).splitlines()[:3]
    text = "\n".join(["head", *lines, "middle", *truncated, "tail"]) + "\n" + good
    f = tmp_path / "job.2.0.err"
    f.write_text(text)
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"))
    out = ingest(env, f)
    assert out.returncode == 1
    errors = [line for line in out.stderr.splitlines() if "skipped block" in line]
    assert len(errors) == 2
    assert f"{f}:{text.index('=== gwtrace block')}: skipped block: corrupt" in errors[0]
    assert "truncated" in errors[1] and f"{f}:{text.index('=== gwtrace block', text.index('middle'))}:" in errors[1]
    assert "ingested 1 block(s), 1 span(s)" in out.stderr
    show = subprocess.run([GWTRACE, "show", "--last"], env=env, capture_output=True, text=True)
    assert "ok_span" in show.stdout


def test_bash_only_node_ships_its_spool_with_plain_sh(tmp_path, receiver):
    gw = tmp_path / "gw"
    gw.mkdir(mode=0o700)
    env = clean_env(GWTRACE_DIR=str(gw))
    run_bash("trace_begin pilot; trace_begin done_step; trace_end; trace_begin killed_step", env)
    out = subprocess.run(["dash", str(SHIP_SPOOL), str(gw)], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    err_file = tmp_path / "job.3.0.err"
    err_file.write_bytes(b"=== Glidein ending ===\n" + out.stdout)
    fenv = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(tmp_path / "f"))
    res = ingest(fenv, err_file)
    assert res.returncode == 0, res.stderr
    spans = {s.name: s for s in receiver.wait_for(3)}
    assert set(spans) == {"pilot", "done_step", "killed_step"}
    assert spans["done_step"].attributes.get("gwtrace.incomplete") is None
    assert spans["killed_step"].attributes["gwtrace.incomplete"] is True
    assert spans["done_step"].parent_id == spans["pilot"].span_id


def test_ship_spool_says_why_it_cannot(tmp_path):
    out = subprocess.run(["dash", str(SHIP_SPOOL), str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("gwtrace-ship-spool: no event log")


def test_pilot_and_sidecar_sigkilled_then_ingest_spool_recovers_everything(sidecar, receiver, tmp_path):
    env = sidecar.start()
    script = f'source "{LIB}"; trace_begin pilot; ' + spans_script(400) + "; trace_begin running; sleep 60"
    proc = subprocess.Popen(["bash", "-c", script], env=env)
    deadline = time.monotonic() + 30
    log = sidecar.dir / "events.log"
    while time.monotonic() < deadline and log.read_bytes().count(b"\trunning") == 0:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    sidecar.kill()
    out = ingest(sidecar.env, "--spool", sidecar.dir)
    assert out.returncode == 0, out.stderr
    spans = receiver.wait_for(402)
    names = Counter(s.name for s in spans)
    assert names == Counter(["pilot", "running"] + [f"s{i}" for i in range(400)])
    by_name = {s.name: s for s in spans}
    assert by_name["running"].attributes["gwtrace.incomplete"] is True
    assert by_name["pilot"].attributes["gwtrace.incomplete"] is True
    assert by_name["s0"].attributes.get("gwtrace.incomplete") is None


def test_ingest_refuses_a_live_sidecars_spool(sidecar):
    sidecar.start()
    out = ingest(sidecar.env, "--spool", sidecar.dir)
    assert out.returncode == 1 and "owns" in out.stderr and out.stderr.count("\n") == 1


def test_status_reports_every_delivery_counter_even_at_zero(sidecar):
    sidecar.start()
    st = sidecar.status()
    for key in ("spans_exported", "spans_retried", "spans_shipped", "spans_dropped", "spans_rejected",
                "spans_dropped_outbox_cap", "spans_pending"):
        assert st[key] == "0", key


@pytest.mark.parametrize("raw", [b"", b"no blocks here\n" * 100])
def test_files_without_blocks_are_fine(tmp_path, raw):
    f = tmp_path / "x.out"
    f.write_bytes(raw)
    assert list(find_blocks(raw)) == []
    out = ingest(clean_env(GWTRACE_HOME=str(tmp_path / "h")), f)
    assert out.returncode == 0 and "ingested 0 block(s)" in out.stderr


def test_bad_block_header_kind():
    blocks = list(find_blocks(frame("otlp", b"abc").replace("kind=otlp", "kind=zip").encode()))
    assert isinstance(blocks[0], BadBlock) and "kind" in blocks[0].reason


def test_sigterm_ships_home_to_the_starters_stderr(sidecar, receiver, tmp_path):
    """A pilot SIGTERMed at end of life: the sidecar writes what it could not
    deliver into the glidein's .err (its starter's stderr), for ingest."""
    err_file = tmp_path / "job.4.0.err"
    sidecar.env.update(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=dead_endpoint(), GWTRACE_STOP_TIMEOUT="1")
    with open(err_file, "w") as err:
        out = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(sidecar.dir), "--ship-to", "stderr"],
                             env=sidecar.env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=60)
    assert out.returncode == 0
    pid = int(out.stdout.split("GWTRACE_SIDECAR_PID=")[1].split(";")[0].strip("'"))
    env = dict(sidecar.env, GWTRACE_DIR=str(sidecar.dir), GWTRACE_SOCKET=f"file://{sidecar.dir}/events.log")
    run_bash(spans_script(30), env)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    blocks = list(find_blocks(err_file.read_bytes()))
    assert len(blocks) == 1 and isinstance(blocks[0], Block) and blocks[0].meta["spans"] == "30"
    assert sidecar.status()["spans_shipped"] == "30"
    res = ingest(clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint,
                           GWTRACE_HOME=str(tmp_path / "f")), err_file)
    assert res.returncode == 0
    assert len(receiver.wait_for(30)) == 30
