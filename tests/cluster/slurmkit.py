"""A real Slurm cluster on this machine for the tests: munged, slurmctld and two slurmd.

Debian's slurm-wlm and munge. Everything lives in one temporary directory:
a private munge key and socket, slurm.conf, state, spool, logs and pid
files. Nodes n1 and n2 are both this machine (NodeHostname = its hostname,
NodeAddr = 127.0.0.1, one slurmd each on its own port); ports are chosen
free at start, so several clusters can run side by side. `stop()` runs
`scontrol shutdown` and stops munged.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUBMIT = REPO / "scripts" / "common" / "submit.sh"
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo")
# The Debian packages install the daemons under /usr/sbin.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def missing_binaries() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name, path=SEARCH_PATH) is None]


def _free_port_pair() -> int:
    """A port p such that p+1 and p+2 are free as well (slurmctld p, slurmd p+1 and p+2)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + 2 > 65535:
            continue
        ok = True
        for port in (base, base + 1, base + 2):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no three consecutive free ports")


CONF = """\
ClusterName=sskjtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SchedulerType=sched/backfill
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
KillWait=10
MinJobAge=600
MessageTimeout=30
NodeName=n[1-2] NodeHostname={hostname} NodeAddr=127.0.0.1 Port={node_ports} CPUs={cpus} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class LocalSlurm:
    root: Path
    cpus: int = 2
    env: dict[str, str] = field(default_factory=dict)
    _munged: subprocess.Popen[bytes] | None = None
    _socket_dir: Path = Path("/nonexistent")

    @property
    def socket(self) -> Path:
        return self._socket_dir / "munge.sock"

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    def start(self, timeout: float = 60.0) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        (self.root / "state").mkdir(exist_ok=True)
        (self.root / "spool").mkdir(exist_ok=True)
        # munged wants every directory above its socket searchable by all.
        self._socket_dir = Path(tempfile.mkdtemp(prefix="sskj-munge-", dir="/tmp"))
        os.chmod(self._socket_dir, 0o755)
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(128))
        os.chmod(key, 0o600)
        base = _free_port_pair()
        self.conf.write_text(CONF.format(
            root=self.root, socket=self.socket, ctld_port=base, node_ports=f"{base + 1}-{base + 2}",
            hostname=socket.gethostname(), cpus=self.cpus,
        ))
        self.env = dict(os.environ)
        self.env["SLURM_CONF"] = str(self.conf)
        self.env["PATH"] = SEARCH_PATH
        for name in list(self.env):
            if name.startswith(("SLURM_JOB", "SLURM_STEP", "SBATCH_", "SRUN_")):
                del self.env[name]
        self._munged = subprocess.Popen(
            ["munged", "-F", f"--socket={self.socket}", f"--key-file={key}",
             f"--pid-file={self.root}/munged.pid", f"--log-file={self.root}/munged.log",
             f"--seed-file={self.root}/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=open(self.root / "munged.err", "wb"),
        )
        self._wait(lambda: self.socket.exists(), 10, "munged socket")
        self._run(["slurmctld"])
        self._run(["slurmd", "-N", "n1"])
        self._run(["slurmd", "-N", "n2"])
        self._wait(self._nodes_idle, timeout, "nodes n1 and n2 idle")

    def _run(self, argv: list[str]) -> None:
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr}{self.logs()}")

    def _nodes_idle(self) -> bool:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, capture_output=True, text=True,
                              timeout=30)
        states = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
        return states.get("n1") == "idle" and states.get("n2") == "idle"

    def _wait(self, ready, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}{self.logs()}")
            time.sleep(0.3)

    def logs(self) -> str:
        out = []
        for log in sorted(self.root.glob("*.log")):
            out.append(f"\n--- {log.name} (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        return "".join(out)

    def job_state(self, job_id: str) -> dict[str, str]:
        """`scontrol show job -o` as a dict (empty when the job is unknown)."""
        proc = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=self.env, capture_output=True,
                              text=True, timeout=30)
        if proc.returncode != 0:
            return {}
        fields: dict[str, str] = {}
        for token in proc.stdout.split():
            if "=" in token:
                key, value = token.split("=", 1)
                fields.setdefault(key, value)
        return fields

    def wait_job(self, job_id: str, timeout: float, states: tuple[str, ...] = ("COMPLETED", "FAILED", "CANCELLED",
                                                                              "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")
                 ) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while True:
            info = self.job_state(job_id)
            if info.get("JobState") in states:
                return info
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} not in {states} after {timeout}s: {info}{self.logs()}")
            time.sleep(1)

    def stop(self) -> None:
        subprocess.run(["scontrol", "shutdown"], env=self.env, capture_output=True, timeout=30)
        for pidfile in ("slurmctld.pid", "slurmd-n1.pid", "slurmd-n2.pid"):
            self._wait_pidfile_gone(self.root / pidfile, 20)
        if self._munged is not None:
            self._munged.send_signal(signal.SIGTERM)
            try:
                self._munged.wait(10)
            except subprocess.TimeoutExpired:
                self._munged.kill()
                self._munged.wait()
        shutil.rmtree(self._socket_dir, ignore_errors=True)

    @staticmethod
    def _wait_pidfile_gone(pidfile: Path, timeout: float) -> None:
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
