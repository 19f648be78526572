#!/usr/bin/python3
"""A rogue client of the gdrmesh coordinator, written in another language (Python grpcio, stubs
generated at run time from the repository's .proto), as an attacker with network access would
write it (issue #9). It sends malformed, oversized, out-of-order and impersonating messages and
plays fake workers that try to get forged results stored. Each probe states the answer it
expects; the coordinator must give a clear status, keep serving, and store no forged result.

Every connection is mutual TLS, as an attacker holding stolen or rogue *worker certificates*
of the cluster CA would make it (issue #23): each fake worker presents the certificate of its own
name (--pki DIR/NAME/{ca,cert,key}.pem), the control client an admin certificate.

Usage: rogue_client.py --addr HOST:PORT --proto-dir DIR --pki DIR --admin NAME
                       --honest-worker NAME [--db FILE]
Prints one line per probe and a summary; exits 1 when any probe got an unexpected answer.
"""
import argparse
import importlib
import os
import queue
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time

# Bounds on waits for the coordinator's answers, in seconds; the sanitizer legs run the
# coordinator 5-15x slower and scale them (GDRMESH_TEST_TIME_SCALE, tests/sanitize/run_ci.sh).
TIME_SCALE = float(os.environ.get("GDRMESH_TEST_TIME_SCALE", "1"))


def bound(seconds):
    return seconds * TIME_SCALE

import grpc

RESULTS = []  # (probe, ok, detail)
_LAST = [time.monotonic()]


def probe(name, ok, detail):
    """Records one probe's verdict; each line shows the seconds since the previous one, so a
    slow answer (a bound hit under a sanitizer) is told apart from a wrong one."""
    now = time.monotonic()
    RESULTS.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail} [{now - _LAST[0]:.1f} s]", flush=True)
    _LAST[0] = now


def load_stubs(proto_dir):
    out = tempfile.mkdtemp(prefix="gdrmesh-rogue-")
    proto = os.path.join(proto_dir, "gdrmesh/v1/gdrmesh.proto")
    # Debian's protoc and gRPC Python plugin (protobuf-compiler, protobuf-compiler-grpc): the
    # protoc bundled in python3-grpc-tools is too old for proto3 `optional`.
    subprocess.run(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_out={out}",
                    "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin", proto], check=True)
    sys.path.insert(0, out)
    pb = importlib.import_module("gdrmesh.v1.gdrmesh_pb2")
    rpc = importlib.import_module("gdrmesh.v1.gdrmesh_pb2_grpc")
    return pb, rpc


def code_of(fn):
    """Runs fn; returns (grpc code name, details)."""
    try:
        fn()
        return "OK", ""
    except grpc.RpcError as e:
        return e.code().name, e.details() or ""


class RogueWorker:
    """A fake worker on the real Connect stream. `answer(cmd)` builds each CommandReply."""

    def __init__(self, pb, channel, register, answer=None):
        self.pb = pb
        self.out = queue.Queue()
        self.answer = answer
        self.registered = threading.Event()
        self.ended = threading.Event()
        self.status = None
        self.commands = []
        stub = importlib.import_module("gdrmesh.v1.gdrmesh_pb2_grpc").WorkerServiceStub(channel)
        self.out.put(pb.WorkerMessage(register=register))
        self.call = stub.Connect(iter(self.out.get, None))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def send(self, msg):
        self.out.put(msg)

    def close(self):
        self.out.put(None)
        self.call.cancel()
        self.ended.wait(bound(5))

    def _read(self):
        try:
            for m in self.call:
                if m.HasField("registered"):
                    self.registered.set()
                elif m.HasField("command"):
                    self.commands.append(m.command.WhichOneof("command"))
                    if self.answer is not None:
                        reply = self.answer(m.command)
                        if reply is not None:
                            self.send(self.pb.WorkerMessage(reply=reply))
            self.status = ("OK", "")
        except grpc.RpcError as e:
            self.status = (e.code().name, e.details() or "")
        finally:
            self.ended.set()


def inventory(pb, host, rate_gbps=400.0, gpus=1, transports=("emulated",), ports=True):
    inv = pb.Inventory(hostname=host, worker_version="rogue")
    nic = inv.nics.add(name="mlx5_0")
    if ports:
        port = nic.ports.add(port=1, state="ACTIVE", link_layer="Ethernet", rate_gbps=rate_gbps)
        port.gids.add(index=0, gid="fe80:0000:0000:0000:0000:0000:0000:0001", type="RoCE v2")
    for i in range(gpus):
        inv.gpus.add(index=i, name="NVIDIA H100", dma_buf_supported=True,
                     gpu_direct_rdma_supported=True)
    for t in transports:
        inv.transports.append(getattr(pb, "TRANSPORT_" + t.upper()))
    return inv


M64 = (1 << 64) - 1


def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def digest_pattern(seed, length):
    """common/pattern.h digestPattern, in Python."""
    total = 0
    for i in range((length + 7) // 8):
        w = splitmix((seed + i * 0x9E3779B97F4A7C15) & M64)
        if (i + 1) * 8 > length:
            w &= (1 << (8 * (length - i * 8))) - 1
        total = (total + splitmix(w ^ ((i * 0xD1B54A32D192ED03) & M64))) & M64
    return total


def digest_bytes(data):
    """common/pattern.h digestBytes, in Python: what a destination reports of landed data."""
    data = bytes(data) + b"\0" * (-len(data) % 8)
    total = 0
    for i, (w,) in enumerate(struct.iter_unpack("<Q", data)):
        total = (total + splitmix(w ^ ((i * 0xD1B54A32D192ED03) & M64))) & M64
    return total


class DataServer:
    """The target's side of the emulated transport (worker/transport/emulated/frame.h), so that
    an honest initiator really moves data to or from a rogue target: HELLO, WRITE (kept), READ
    (answered with zeros: the rogue never fills its buffer), END, each acknowledged."""
    HEADER = struct.Struct("<IB3xIIQQQ")  # magic, type, key, error, offset, length, seq: 40 B
    MAGIC = 0x45524447

    def __init__(self, size):
        self.key = 0x5EED1 | 1
        self.buffer = bytearray(size)
        self.landed = 0  # bytes of the largest write
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _read(self, conn, n):
        out = bytearray()
        while len(out) < n:
            chunk = conn.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def _serve(self):
        conn, _ = self.sock.accept()
        try:
            while True:
                magic, kind, key, _, offset, length, seq = self.HEADER.unpack(
                    self._read(conn, self.HEADER.size))
                if kind in (2, 5):  # WRITE, SEND: payload lands
                    data = self._read(conn, length)
                    off = 0 if kind == 5 else offset
                    self.buffer[off:off + length] = data
                    self.landed = max(self.landed, off + length)
                if kind == 3:  # READ request: READ response with (zero) payload
                    conn.sendall(self.HEADER.pack(self.MAGIC, 4, 0, 0, offset, length, seq) +
                                 bytes(self.buffer[offset:offset + length]))
                    continue
                conn.sendall(self.HEADER.pack(self.MAGIC, 6, 0, 0, 0, 0, seq))  # ACK
        except (EOFError, OSError):
            pass
        finally:
            conn.close()


def forger(pb, mode, peers, gbps=400.0, claim_memory=None, target_gbps=0.0, unasked_digest=False):
    """Answers like a worker that moves no data and claims a perfect `gbps` run.
    mode: 'claim' (says 'checked, 0 wrong'), 'guess' (makes up a digest), 'collude' (computes
    the digest from the initiator's seed, which it shares with its partner in this process),
    'serve' (a real emulated data path, DataServer: an honest initiator moves data to or from
    it; its finish reports a digest of what landed when asked, and a digest of its own pattern
    when not asked, as a rogue source of a read can).
    claim_memory: (memory, reg_path) its prepare reports whatever was asked.
    target_gbps: figures its finish sends although a target measures nothing.
    unasked_digest ('serve'): its finish sends a digest although it was not asked to verify."""
    servers = {}

    def answer(cmd):
        r = pb.CommandReply(request_id=cmd.request_id)
        r.status.ok = True
        kind = cmd.WhichOneof("command")
        if kind == "prepare":
            spec = cmd.prepare.spec
            peers[spec.role] = spec.fill_seed
            peers["own"] = spec.fill_seed
            d = r.prepare.local
            d.transport = spec.transport
            d.memory = spec.memory
            d.reg_path = pb.REG_PATH_DMABUF if spec.memory == pb.MEMORY_KIND_CUDA else pb.REG_PATH_HOST
            if claim_memory is not None:
                d.memory, d.reg_path = claim_memory
            d.device = "mlx5_0"
            d.port = 1
            d.tcp_host = "127.0.0.1"
            d.tcp_port = 9
            d.length = spec.buffer_size
            if mode == "serve":
                srv = DataServer(spec.buffer_size)
                servers["data"] = srv
                d.tcp_port = srv.port
                d.rkey = srv.key
        elif kind == "start":
            m = r.start.measurement
            m.message_size = cmd.start.run.message_size
            m.iterations = cmd.start.run.iterations
            m.bw.bytes = m.message_size * m.iterations
            m.bw.messages = m.iterations
            m.bw.seconds = m.bw.bytes * 8 / (gbps * 1e9)
            m.bw.avg_gbps = gbps
            m.bw.peak_gbps = gbps
            r.start.path_mtu = 4096
        elif kind == "finish":
            length = cmd.finish.verify_length
            if target_gbps > 0:
                m = r.finish.measurement
                m.message_size = length
                m.bw.bytes = length * 100
                m.bw.messages = 100
                m.bw.seconds = m.bw.bytes * 8 / (target_gbps * 1e9)
                m.bw.avg_gbps = target_gbps
                m.bw.peak_gbps = target_gbps
            if mode == "serve":
                srv = servers["data"]
                if cmd.finish.verify or unasked_digest:
                    ig = r.finish.integrity
                    ig.digested = True
                    ig.bytes_checked = length
                    ig.where = "host"
                    # Asked: what landed. Not asked (the source of a read): its own pattern,
                    # whose digest the coordinator expects of the honest destination.
                    ig.digest = (digest_bytes(srv.buffer[:length]) if cmd.finish.verify
                                 else digest_pattern(peers["own"], length))
                return r
            ig = r.finish.integrity
            if mode == "claim":
                ig.checked = True
                ig.bytes_checked = length
                ig.where = "gpu:0"
            else:
                seed = peers.get(pb.ROLE_INITIATOR, 0) if mode == "collude" else 12345
                ig.digested = True
                ig.digest = digest_pattern(seed, length)
                ig.bytes_checked = length
                ig.where = "gpu:0"
        elif kind == "verify":
            ig = r.verify.integrity
            ig.checked = True
            ig.bytes_checked = cmd.verify.length
            ig.where = "gpu:0"
        elif kind == "release":
            r.release.SetInParent()
        return r

    return answer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--pki", required=True, help="DIR/NAME/{ca,cert,key}.pem per identity")
    ap.add_argument("--admin", required=True, help="the admin identity under --pki")
    ap.add_argument("--honest-worker", required=True)
    ap.add_argument("--db", default="")
    args = ap.parse_args()
    pb, rpc = load_stubs(args.proto_dir)

    def channel_for(name):
        """A mutual-TLS channel presenting the certificate of `name` (issued by run_rogue.sh)."""
        def read(f):
            with open(os.path.join(args.pki, name, f), "rb") as fh:
                return fh.read()
        creds = grpc.ssl_channel_credentials(read("ca.pem"), read("key.pem"), read("cert.pem"))
        ch = grpc.secure_channel(args.addr, creds, options=[
            ("grpc.max_send_message_length", 64 << 20),
            ("grpc.max_receive_message_length", 64 << 20)])
        grpc.channel_ready_future(ch).result(timeout=bound(10))
        return ch

    channel = channel_for(args.admin)
    control = rpc.ControlServiceStub(channel)
    probe_channel = channel_for("rogue-probe")  # a worker certificate of the cluster CA

    def serving():
        c, d = code_of(lambda: control.ListWorkers(pb.ListWorkersRequest(), timeout=bound(10)))
        if c != "OK":
            print(f"     (not serving: ListWorkers {c} {d[:100]})", flush=True)
        return c == "OK"

    def online(name):
        ws = control.ListWorkers(pb.ListWorkersRequest(), timeout=bound(10)).workers
        return any(w.name == name and w.state == "online" for w in ws)

    def passed_count():
        rs = control.ListResults(pb.ListResultsRequest(limit=10000), timeout=bound(10)).results
        return sum(1 for r in rs if r.status == pb.TEST_STATUS_PASSED)

    passed_before = passed_count()

    # 1. Malformed bytes to every unary control method.
    for method in ["ListWorkers", "RunTest", "ListResults", "StartSweep", "GetSweep",
                   "CancelSweep", "JudgeSweep", "ListSweeps", "ListSchedules"]:
        raw = channel.unary_unary(f"/gdrmesh.v1.ControlService/{method}",
                                  request_serializer=None, response_deserializer=None)
        c, d = code_of(lambda: raw(b"\xff\xff\xff\xff\x0f garbage", timeout=bound(10)))
        probe(f"malformed {method}", c in ("INVALID_ARGUMENT", "INTERNAL") and serving(),
              f"{c} {d[:80]}")

    # 2. Malformed bytes on the worker stream.
    raw_stream = probe_channel.stream_stream("/gdrmesh.v1.WorkerService/Connect",
                                       request_serializer=None, response_deserializer=None)
    c, d = code_of(lambda: list(raw_stream(iter([b"\x0a\xff\xff\xff"]), timeout=bound(10))))
    # gRPC's callback API reports an unparsable message as the end of the client's stream, so
    # the coordinator closes it like a worker that hung up (status OK): nothing registered.
    probe("malformed Connect", c in ("INVALID_ARGUMENT", "INTERNAL", "OK") and serving(),
          f"{c} {d[:80]} (stream closed, nothing registered)")

    # 3. Out of order: a heartbeat before Register.
    hb = iter([pb.WorkerMessage(heartbeat=pb.Heartbeat(unix_ms=1))])
    c, d = code_of(lambda: list(rpc.WorkerServiceStub(probe_channel).Connect(hb, timeout=bound(10))))
    probe("heartbeat before Register", c == "INVALID_ARGUMENT" and "Register" in d, f"{c} {d[:80]}")

    # 4. Registrations nobody should be able to make.
    bad = {
        "3 MB host name": pb.Register(name="big", protocol_version=1,
                                       inventory=pb.Inventory(hostname="h" * (3 << 20))),
        "5000 NICs": pb.Register(name="many", protocol_version=1,
                                 inventory=pb.Inventory(hostname="x",
                                                        nics=[pb.Nic(name=f"n{i}") for i in range(5000)])),
        "escape sequence in the name": pb.Register(name="evil\x1b[2J", protocol_version=1),
        "newline in a label": pb.Register(name="lbl", protocol_version=1,
                                          labels={"rack": "r1\nforged row"}),
        "escape in a GPU name": pb.Register(name="gpuname", protocol_version=1, inventory=pb.Inventory(
            hostname="x", gpus=[pb.Gpu(name="H100\x1b]0;pwned\x07")])),
        "protocol_version 99": pb.Register(name="future", protocol_version=99),
    }
    for what, reg in bad.items():
        w = RogueWorker(pb, probe_channel, reg)
        w.ended.wait(bound(10))
        c, d = w.status or ("NONE", f"no answer within {bound(10):.0f} s")
        probe(f"register: {what}",
              c in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED") and len(d) < 400 and serving(),
              f"{c} {d[:100]}")
    ws = control.ListWorkers(pb.ListWorkersRequest(), timeout=bound(10)).workers
    probe("refused registrations left no worker behind",
          not any(w.name in ("big", "many", "lbl", "gpuname", "future") for w in ws),
          ", ".join(sorted(w.name for w in ws)))

    # 5. Impersonation of the honest worker while it is online.
    w = RogueWorker(pb, probe_channel, pb.Register(name=args.honest_worker, protocol_version=1,
                                                   inventory=inventory(pb, "impostor")))
    w.ended.wait(bound(10))
    c, d = w.status or ("NONE", "")
    probe("register as an online worker", c in ("ALREADY_EXISTS", "PERMISSION_DENIED")
          and online(args.honest_worker), f"{c} {d[:100]}; {args.honest_worker} still online")

    # 6. A reply to a command never sent, and a second Register, on a registered stream.
    w = RogueWorker(pb, channel_for("rogue-ooo"), pb.Register(name="rogue-ooo", protocol_version=1,
                                                             inventory=inventory(pb, "ooo")))
    w.registered.wait(bound(10))
    w.send(pb.WorkerMessage(reply=pb.CommandReply(request_id=987654321)))
    w.send(pb.WorkerMessage(register=pb.Register(name="rogue-ooo2", protocol_version=1)))
    w.ended.wait(bound(5))
    c, d = w.status or ("still open", "")
    probe("unsolicited reply and second Register", serving() and not online("rogue-ooo2"),
          f"stream: {c} {d[:80]}")
    w.close()

    # 7. Requests beyond every limit.
    def run_req(**kw):
        base = dict(initiator=pb.EndpointSelector(worker=args.honest_worker, gpu=-1),
                    target=pb.EndpointSelector(worker=args.honest_worker, gpu=-1),
                    op=pb.OP_WRITE, mode=pb.MODE_BANDWIDTH, message_size=65536, iterations=10)
        base.update(kw)
        return pb.RunTestRequest(**base)

    for what, field, req in [("1 PiB message", "size", run_req(message_size=1 << 50)),
                             ("10^15 iterations", "iters", run_req(iterations=10**15)),
                             ("100000 QPs", "qps", run_req(num_qps=100000)),
                             ("1-year duration", "duration", run_req(duration_seconds=3.2e7))]:
        c, d = code_of(lambda: control.RunTest(req, timeout=bound(30)))
        probe(f"RunTest {what}", c == "INVALID_ARGUMENT" and d.startswith(field) and serving(),
              f"{c} {d[:100]}")

    # 8. Fake workers that answer the coordinator's commands themselves (the attack):
    # each tries to get a PASSED GPUDirect 400 Gb/s result stored.
    for mode, rate, expect in [("claim", 400.0, "could not have made"),
                               ("guess", 400.0, "forged or broken digest"),
                               ("collude", 100.0, "impossible figure")]:
        peers = {}
        names = (f"rogue-{mode}-a", f"rogue-{mode}-b")
        fakes = [RogueWorker(pb, channel_for(n),
                             pb.Register(name=n, protocol_version=1,
                                         inventory=inventory(pb, n, rate_gbps=rate,
                                                             transports=("verbs",))),
                             forger(pb, mode, peers)) for n in names]
        for f in fakes:
            f.registered.wait(bound(10))
        req = pb.RunTestRequest(
            initiator=pb.EndpointSelector(worker=names[0], memory=pb.MEMORY_KIND_CUDA, gpu=0,
                                          reg_path=pb.REG_PATH_DMABUF),
            target=pb.EndpointSelector(worker=names[1], memory=pb.MEMORY_KIND_CUDA, gpu=0,
                                       reg_path=pb.REG_PATH_DMABUF),
            op=pb.OP_WRITE, mode=pb.MODE_BANDWIDTH, message_size=65536, iterations=100)
        resp = None
        try:
            resp = control.RunTest(req, timeout=bound(60))
        except grpc.RpcError as e:
            probe(f"forgery ({mode})", False, f"RunTest failed: {e.code().name} {e.details()}")
        if resp is not None:
            r = resp.result
            probe(f"forgery ({mode}): not stored as PASSED",
                  r.status != pb.TEST_STATUS_PASSED and expect in r.reason,
                  f"{pb.TestStatus.Name(r.status)}: {r.reason[:140]}")
        for f in fakes:
            f.close()

    # 9. Issue #23: which side's reply counts, and the bound no worker can switch off.
    def fake(name, answer, **inv):
        w = RogueWorker(pb, channel_for(name), pb.Register(
            name=name, protocol_version=1, inventory=inventory(pb, name, **inv)), answer)
        w.registered.wait(bound(10))
        return w

    def sel(name, memory=pb.MEMORY_KIND_HOST, reg=pb.REG_PATH_AUTO):
        return pb.EndpointSelector(worker=name, memory=memory, gpu=0 if memory == pb.MEMORY_KIND_CUDA
                                   else -1, reg_path=reg)

    def run_test(what, ini, tgt, op=pb.OP_WRITE, transport=pb.TRANSPORT_UNSPECIFIED):
        req = pb.RunTestRequest(initiator=ini, target=tgt, op=op, mode=pb.MODE_BANDWIDTH,
                                message_size=65536, iterations=20, transport=transport,
                                gid_index=-1)
        try:
            return control.RunTest(req, timeout=bound(60)).result
        except grpc.RpcError as e:
            probe(what, False, f"RunTest failed: {e.code().name} {e.details()}")
            return None

    def findings(name):
        ws = control.ListWorkers(pb.ListWorkersRequest(), timeout=bound(10)).workers
        return [f for w in ws if w.name == name for f in w.findings]

    def shown(r):
        return (f"{pb.TestStatus.Name(r.status)} {r.measurement.bw.avg_gbps:.1f} Gb/s "
                f"{pb.MemoryKind.Name(r.target.memory)}/{pb.RegPath.Name(r.target.reg_path)}"
                f"{' GPUDirect' if r.gpudirect else ''}: {r.reason[:220]}")

    # A read's target is its source: it served the honest initiator zeros, then put a digest of
    # its own pattern into a finish that asked for no verification.
    w = fake("rogue-read", forger(pb, "serve", {}, unasked_digest=True))
    r = run_test("read target's unasked digest", sel(args.honest_worker), sel("rogue-read"),
                 op=pb.OP_READ)
    if r is not None:
        probe("read target's unasked digest: FAILED, the violation named",
              r.status == pb.TEST_STATUS_FAILED and
              "protocol violation by worker rogue-read: integrity" in r.reason and
              r.integrity.wrong_bytes > 60000, shown(r))
        f = findings("rogue-read")
        probe("read target's violation recorded against it (gdrmesh workers)",
              any("protocol violation" in x for x in f), "; ".join(f)[:200])
    w.close()

    # A write's target sends figures of its own: the initiator's measured figure is stored.
    w = fake("rogue-write", forger(pb, "serve", {}, target_gbps=9999.0))
    r = run_test("write target's figures", sel(args.honest_worker), sel("rogue-write"))
    if r is not None:
        bw = r.measurement.bw.avg_gbps
        probe("write target's 9999 Gb/s: not stored, the initiator's figure is",
              r.status == pb.TEST_STATUS_FAILED and 0 < bw < 9999 and
              "protocol violation by worker rogue-write: measurement" in r.reason, shown(r))
    w.close()

    # Port rates that would switch the bound off are refused, the field named.
    for what, rate in [("0", 0.0), ("NaN", float("nan")), ("+inf", float("inf"))]:
        w = RogueWorker(pb, probe_channel, pb.Register(
            name="rogue-probe", protocol_version=1, inventory=inventory(pb, "rate", rate_gbps=rate)))
        w.ended.wait(bound(10))
        c, d = w.status or ("NONE", f"no answer within {bound(10):.0f} s")
        probe(f"register: port rate {what}",
              c == "INVALID_ARGUMENT" and d.startswith("inventory.nics[0].ports[0].rate_gbps"),
              f"{c} {d[:120]}")

    # Host memory asked on both sides; one colluder reports GPU memory through dma-buf.
    peers = {}
    fakes = [fake("rogue-hostmem-a", forger(pb, "collude", peers, gbps=100.0),
                  transports=("verbs",)),
             fake("rogue-hostmem-b", forger(pb, "collude", peers, gbps=100.0,
                                            claim_memory=(pb.MEMORY_KIND_CUDA, pb.REG_PATH_DMABUF)),
                  transports=("verbs",))]
    r = run_test("host memory reported as GPU", sel("rogue-hostmem-a"), sel("rogue-hostmem-b"),
                 transport=pb.TRANSPORT_VERBS)
    if r is not None:
        probe("host memory asked, GPU + dma-buf reported: not stored as GPUDirect",
              r.status != pb.TEST_STATUS_PASSED and not r.gpudirect and
              r.target.memory == pb.MEMORY_KIND_HOST and
              "protocol violation by worker rogue-hostmem-b: memory" in r.reason, shown(r))
    for f in fakes:
        f.close()

    # One certificate testing itself over a NIC without ports (no rate to bound it by).
    w = fake("rogue-self", forger(pb, "collude", {}, gbps=5000.0), transports=("verbs",),
             ports=False)
    gpu = dict(memory=pb.MEMORY_KIND_CUDA, reg=pb.REG_PATH_DMABUF)
    r = run_test("self-test without ports", sel("rogue-self", **gpu), sel("rogue-self", **gpu),
                 transport=pb.TRANSPORT_VERBS)
    if r is not None:
        probe("self-test over a NIC without ports at 5000 Gb/s: not PASSED",
              r.status != pb.TEST_STATUS_PASSED and "registered no port rate" in r.reason, shown(r))
    w.close()

    # Hosts of a class the config expects at 100 Gb/s register 1600 Gb/s ports and collude.
    peers = {}
    names = ("rogue-class-a", "rogue-class-b")
    fakes = [fake(n, forger(pb, "collude", peers, gbps=400.0), rate_gbps=1600.0,
                  transports=("verbs",)) for n in names]
    f = findings(names[0])
    probe("registration contradicting the config's expected inventory is flagged",
          any("rate_gbps: 1600 registered" in x for x in f), "; ".join(f)[:200])
    r = run_test("class-bounded collusion", sel(names[0], **gpu), sel(names[1], **gpu),
                 transport=pb.TRANSPORT_VERBS)
    if r is not None:
        probe("400 Gb/s between hosts of a 100 Gb/s class: rejected by the class's rate",
              r.status != pb.TEST_STATUS_PASSED and
              "above the ports' rate (100 Gb/s)" in r.reason, shown(r))
    for f in fakes:
        f.close()

    # 10. Nothing forged reached the store, and the coordinator still serves.
    passed_after = passed_count()
    probe("no PASSED result was added by the probes", passed_after == passed_before,
          f"{passed_before} -> {passed_after}")
    if args.db:
        db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        n = db.execute("SELECT COUNT(*) FROM results WHERE status='PASSED' AND "
                       "(initiator_worker LIKE 'rogue%' OR target_worker LIKE 'rogue%')").fetchone()[0]
        probe("database: forged results accepted", n == 0, f"{n}")
    probe("coordinator still serving", serving() and online(args.honest_worker), "ListWorkers OK")

    bad_probes = [r for r in RESULTS if not r[1]]
    print(f"\nrogue probes: {len(RESULTS)} tried, {len(bad_probes)} unexpected")
    return 1 if bad_probes else 0


if __name__ == "__main__":
    sys.exit(main())
