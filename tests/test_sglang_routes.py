"""The HTTP routes and request fields the run loop uses on SGLang, checked against a real release
(benchmarks/check_sglang_routes.py): the committed facts of the newest release installable here, the parser on a
small source tree, and the wheel itself when SSKJ_SGLANG_WHEEL names one (`pip download --no-deps sglang`)."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO / "benchmarks" / "data" / "sglang_routes.json"
_spec = importlib.util.spec_from_file_location("check_sglang_routes", REPO / "benchmarks" / "check_sglang_routes.py")
assert _spec is not None and _spec.loader is not None
routes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = routes
_spec.loader.exec_module(routes)


def test_the_committed_release_serves_every_route_and_field_the_loop_uses() -> None:
    facts = json.loads(FACTS.read_text())
    assert facts["release"] == "0.5.23"
    lines = routes.check(facts)
    assert len(lines) == 15 and all(line.startswith("OK ") for line in lines), lines
    assert "OK POST /flush_cache (SGLang 0.5.23)" in lines and "OK GET /metrics (SGLang 0.5.23)" in lines


def test_a_missing_route_method_or_field_is_named() -> None:
    facts = json.loads(FACTS.read_text())
    broken = copy.deepcopy(facts)
    broken["routes"]["/flush_cache"] = ["GET"]  # the loop POSTs
    del broken["routes"]["/server_info"]
    del broken["fields"]["GenerateReqInput"]["input_ids"]
    broken["fields"]["CompletionRequest"]["prompt"] = "str"
    missing = [line for line in routes.check(broken) if line.startswith("MISSING")]
    assert missing == ["MISSING POST /flush_cache (SGLang 0.5.23)", "MISSING GET /server_info (SGLang 0.5.23)",
                       "MISSING field GenerateReqInput.input_ids (SGLang 0.5.23)",
                       "MISSING field CompletionRequest.prompt (token ids) (SGLang 0.5.23)"]


def test_the_source_parser_reads_decorators_mounts_and_models(tmp_path: Path) -> None:
    files = {
        routes.FILES["routes"]: 'app = None\n@app.get("/health")\n@app.get("/health_generate")\nasync def h(): ...\n'
                                '@app.api_route("/flush_cache", methods=["GET", "POST"])\nasync def f(): ...\n'
                                '@app.api_route(\n    "/generate",\n    methods=["POST", "PUT"],\n)\nasync def g(): ...\n'
                                '@other.get("/not-app")\nasync def o(): ...\n',
        routes.FILES["mounts"]: 'def add(app):\n    route = Mount("/metrics", make_asgi_app())\n',
        routes.FILES["generate"]: "class GenerateReqInput:\n    input_ids: Optional[List[int]] = None\n    stream: bool = False\n",
        routes.FILES["completion"]: "class CompletionRequest(BaseModel):\n    prompt: Union[List[int], str]\n",
        routes.SAMPLING_FILE: "class SamplingParams:\n    def __init__(self, max_new_tokens: int = 128, temperature=1.0):\n"
                              "        pass\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    facts = routes.from_source(tmp_path)
    assert facts["routes"] == {"/flush_cache": ["GET", "POST"], "/generate": ["POST", "PUT"], "/health": ["GET"],
                               "/health_generate": ["GET"], "/metrics": ["GET"]}
    assert facts["fields"]["GenerateReqInput"] == {"input_ids": "Optional[List[int]]", "stream": "bool"}
    assert set(facts["fields"]["SamplingParams"]) == {"max_new_tokens", "temperature"}
    assert "MISSING field SamplingParams.ignore_eos (SGLang source)" in routes.check(facts)


@pytest.mark.skipif(not Path(os.environ.get("SSKJ_SGLANG_WHEEL", "/nonexistent")).is_file(),
                    reason="SSKJ_SGLANG_WHEEL names no SGLang wheel (pip download --no-deps sglang)")
def test_the_wheel_itself_passes() -> None:
    facts = routes.from_wheel(Path(os.environ["SSKJ_SGLANG_WHEEL"]))
    assert all(line.startswith("OK ") for line in routes.check(facts)), routes.check(facts)
