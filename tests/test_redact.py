"""The one redaction (sskj_results/contract/redact.py): every secret form, through every Python writer."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.envfile import Override
from sskj_results.ingest.metadata import write_metadata
from sskj_results.contract.models import Config
from sskj_results.contract.redact import REDACTED, is_secret_name, is_secret_option, redact, redact_argv

REPO = Path(__file__).resolve().parents[1]

# (argument vector, what it must become); every secret is spelled S3CRET... so leaks are easy to find
FORMS = [
    (["--api-key", "S3CRET1"], ["--api-key", REDACTED]),
    (["--api-key=S3CRET2"], [f"--api-key={REDACTED}"]),
    (["--hf_token=S3CRET3"], [f"--hf_token={REDACTED}"]),
    (["--key", "S3CRET4"], ["--key", REDACTED]),
    (["--HF-Token", "S3CRET5"], ["--HF-Token", REDACTED]),
    (["-password", "S3CRET6"], ["-password", REDACTED]),
    (["--auth", "S3CRET7"], ["--auth", REDACTED]),
    (["--client-credential=S3CRET8"], [f"--client-credential={REDACTED}"]),
    (["--env=HF_TOKEN=S3CRET9"], [f"--env=HF_TOKEN={REDACTED}"]),
    (["--env", "OPENAI_API_KEY=S3CRET10"], ["--env", f"OPENAI_API_KEY={REDACTED}"]),
    (["-e", "aws_secret_access_key=S3CRET11"], ["-e", f"aws_secret_access_key={REDACTED}"]),
    (["-eMY-PASSWORD=S3CRET12"], [f"-eMY-PASSWORD={REDACTED}"]),
    (["HUGGING_FACE_HUB_TOKEN=S3CRET13", "python"], [f"HUGGING_FACE_HUB_TOKEN={REDACTED}", "python"]),
    (["env", "Db_Passwd=S3CRET14"], ["env", f"Db_Passwd={REDACTED}"]),
    (["https://bob:S3CRET15@example.com/x"], [f"https://bob:{REDACTED}@example.com/x"]),
    (["--url=https://S3CRET16@github.com/r.git"], [f"--url=https://{REDACTED}@github.com/r.git"]),
    (["http://h/v1?api_key=S3CRET17&a=1"], [f"http://h/v1?api_key={REDACTED}&a=1"]),
    (["-H", "Authorization: Bearer S3CRET18"], ["-H", f"Authorization: {REDACTED}"]),
    (["--header=X-Api-Key: S3CRET19"], [f"--header=X-Api-Key: {REDACTED}"]),
    (["-u", "bob:S3CRET20"], ["-u", f"bob:{REDACTED}"]),
    (["--hf-overrides", '{"hf_token": "S3CRET21", "n": 1}'], ["--hf-overrides", f'{{"hf_token": "{REDACTED}", "n": 1}}']),
    (["Bearer", "S3CRET22"], ["Bearer", REDACTED]),
    (["--cookie", "S3CRET23"], ["--cookie", REDACTED]),
]
KEPT = [
    ["--max-num-batched-tokens", "8192"],
    ["--kv-cache-dtype", "fp8"],
    ["--tokenizer", "/m/tok"],
    ["--max-tokens", "8"],
    ["MAX_TOKENS=3", "SPEC_TOKENS=3", "TOKENIZER_PATH=/t"],
    ["--disable-auth-check", "--port", "8"],  # a flag: the next word is an option, not its value
    ["--token-file", "/run/secrets/t"],  # a path to a secret, not the secret
    ["--api-key", "--port", "30000"],  # no value given
    ["https://example.com/a@b"],  # no credentials
    ["--speculative-config", '{"method":"ngram","num_speculative_tokens":3}'],
    ["--ssl-keyfile", "/etc/k.pem"],
]


@pytest.mark.parametrize("before, after", FORMS, ids=[" ".join(f[0])[:30] for f in FORMS])
def test_each_secret_form_is_redacted(before: list[str], after: list[str]) -> None:
    assert redact_argv(before) == after
    line = shlex.join(["cmd", *before, "--port", "1"])
    redacted = redact(line)
    assert "S3CRET" not in redacted
    assert "S3CRET" not in redact(" ".join(["cmd", *before]))  # also unquoted, as in free text
    assert shlex.split(redacted) == ["cmd", *after, "--port", "1"]
    assert redact(redacted) == redacted  # idempotent


@pytest.mark.parametrize("words", KEPT, ids=[" ".join(w)[:30] for w in KEPT])
def test_lookalikes_are_kept(words: list[str]) -> None:
    assert redact_argv(words) == words
    line = shlex.join(words)
    assert redact(line) == line


def test_names() -> None:
    for name in ("HF_TOKEN", "hf-token", "OpenAI_Api_Key", "x_APIKEY", "AUTH", "Db-Password", "my_credentials"):
        assert is_secret_name(name), name
    for name in ("MAX_TOKENS", "TOKENIZER", "KVCACHE_SPACE", "AUTHOR", "MONKEY", "PASSWORDS_FILE_X"[:0] or "KEYBOARD"):
        assert not is_secret_name(name), name
    assert is_secret_option("--client-secret") and not is_secret_option("--disable-auth-check")


def test_printf_q_lines_from_the_shell_are_redacted() -> None:
    words = [w for before, _ in FORMS for w in before]
    quoted = subprocess.run(["bash", "-c", 'printf "%q " "$@"', "_", *words], capture_output=True, text=True,
                            check=True).stdout
    out = redact(quoted)
    assert "S3CRET" not in out
    assert shlex.split(out) == [w for _, after in FORMS for w in after]


def test_script_form_used_by_the_shell() -> None:
    words = [w for before, _ in FORMS for w in before]
    proc = subprocess.run([sys.executable, "-I", "-S", str(REPO / "scripts" / "common" / "redact.py"), "--", *words],
                          capture_output=True, check=True)
    assert proc.stdout.decode().split("\0")[:-1] == [w for _, after in FORMS for w in after]


def test_cli_redact_words_and_lines() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["redact", "--", "--api-key", "S3CRET1", "x"])
    assert result.exit_code == 0 and result.output == f"--api-key\0{REDACTED}\0x\0"
    result = runner.invoke(main, ["redact", "--lines"], input="a HF_TOKEN=S3CRET2 b\nplain\n")
    assert result.output == f"a HF_TOKEN={REDACTED} b\nplain\n"


def test_config_never_keeps_a_secret() -> None:
    cfg = Config.model_validate({"hf_token": "S3CRET1", "api_key": 1234, "server_args": "x --key S3CRET2",
                                 "vllm_extra_args": "--api-key=S3CRET3", "spec_tokens": 3, "tp": 8})
    dumped = cfg.model_dump(exclude_none=True)
    assert "S3CRET" not in json.dumps(dumped)
    assert dumped["hf_token"] == REDACTED and dumped["api_key"] == REDACTED  # records that it was set
    assert dumped["spec_tokens"] == 3 and dumped["tp"] == 8


def test_override_notice_never_prints_a_secret() -> None:
    assert "S3CRET" not in Override("HF_TOKEN", "S3CRET1", "other", "config.env").message
    assert "from_env" in Override("PORT", "from_env", "1", "config.env").message


def _every_file_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


def test_every_form_through_every_python_writer(tmp_path: Path) -> None:
    """results.json (metadata), report.md, import-legacy's results/report/README, comparison."""
    words = [w for before, _ in FORMS for w in before]
    server_args = shlex.join(["python", "-m", "vllm.entrypoints.openai.api_server", *words])
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "https://u:S3CRET0@hub/m", "engine": "vllm", "chip": "cpu",
                         "description": "token HF_TOKEN=S3CRET0"},
                   {"server_args": server_args, "hf_token": "S3CRET0", "extra": " ".join(words)}, detect=False)
    runner = CliRunner()
    assert runner.invoke(main, ["report", str(run)]).exit_code == 0
    raw = REPO / "tests" / "data" / "raw"
    src = next(p for p in sorted(raw.rglob("*.jsonl")))
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / src.name).write_bytes(src.read_bytes())
    out = tmp_path / "imported"
    result = runner.invoke(main, ["import-legacy", str(legacy), "--out", str(out), "--chip", "cpu",
                                  "--engine", "vllm", "--model", "m", "--server-args", server_args])
    assert out.exists(), result.output
    text = _every_file_text(tmp_path) + result.output
    assert re.findall(r"S3CRET\d+", text) == []
    assert REDACTED in (run / "results.json").read_text() and REDACTED in (run / "report.md").read_text()
