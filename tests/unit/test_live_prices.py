"""The live-price figures of `gensyn job estimate` (pure, on hand-made offers), the score mirror's arithmetic,
and the dated cloud table with its override."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensyn_py.chain import scoring
from gensyn_py.errors import ConfigError
from gensyn_py.requester.cloud import BUILT_IN, PRICES_AS_OF, load_cloud_prices
from gensyn_py.requester.estimate import HARDWARE
from gensyn_py.requester.live_prices import JobNeeds, class_prices, live_prices, median
from gensyn_py.requester.market import SolverOffer
from gensyn_py.types import DEVICE_CLASSES, Hardware, Reputation

E18 = 10**18
CPU, CUDA = DEVICE_CLASSES["cpu"], DEVICE_CLASSES["cuda"]


def offer(name: str, price: int, *, device: int = CPU, mem: int = 16_000, tp: int = 1_000,
          rep: tuple[int, int, int] = (0, 0, 0)) -> SolverOffer:
    return SolverOffer(name, Hardware(device, mem, tp, price * E18), Reputation(*rep))


def test_median_is_the_middle_price_or_the_floor_of_the_two_middle_ones() -> None:
    assert median([]) is None
    assert median([5]) == 5
    assert median([9, 1, 5]) == 5
    assert median([1, 2]) == 1  # floor of 1.5: prices stay integers
    assert median([4 * E18, 2 * E18, 8 * E18, 6 * E18]) == 5 * E18


def test_the_score_mirror_weighs_reliability_cheapness_and_capacity() -> None:
    assert scoring.score(0, 0, 0, 100, 200, 100, 50) == (6 * 5000 + 3 * 5000 + 10_000) // 10  # 5500, a newcomer
    assert scoring.score(8, 0, 0, 0, 200, 100, 0) == (6 * 9000 + 3 * 10_000 + 10_000) // 10
    assert scoring.score(0, 0, 0, 0, 0, 0, 0) == (6 * 5000 + 3 * 10_000 + 10_000) // 10  # maxPrice 0: full cheapness
    # ofNode clamps: a price above the maximum counts as the maximum, a throughput below the minimum as the minimum
    hw = Hardware(CPU, 1, 10, 500)
    assert scoring.of_node(Reputation(0, 0, 0), hw, 200, 50) == scoring.score(0, 0, 0, 200, 200, 50, 50)
    assert [scoring.required(100, 60, t) for t in (100, 130, 160, 200)] == [10_000, 5000, 0, 0]
    assert scoring.required(100, 0, 100) == 0


def test_class_figures_count_every_solver_but_only_eligible_ones_win() -> None:
    offers = [
        offer("cheap-new", 3),
        offer("reliable", 5, rep=(40, 0, 0)),
        offer("too-dear", 9),  # above the job's maximum: counted, never eligible
        offer("small", 1, mem=32),  # not enough memory for the job
        offer("slow", 1, tp=10),  # below the job's minimum throughput
        offer("gpu", 2, device=CUDA),
    ]
    needs = JobNeeds(max_price=8 * E18, min_memory_mb=64, min_throughput=100)
    cpu = class_prices(offers, "cpu", needs)
    assert (cpu.solvers, cpu.min_price, cpu.median_price, cpu.eligible) == (5, 1 * E18, 3 * E18, 2)
    # reliability weighs 6, cheapness 3: 40 completed units beat a 2-token discount
    assert (cpu.winner, cpu.winning_price, cpu.tied) == ("reliable", 5 * E18, 1)
    assert cpu.winning_score == scoring.of_node(Reputation(40, 0, 0), Hardware(CPU, 16_000, 1_000, 5 * E18),
                                                8 * E18, 100)
    cuda = class_prices(offers, "cuda", needs)
    assert (cuda.solvers, cuda.min_price, cuda.eligible, cuda.winning_price) == (1, 2 * E18, 1, 2 * E18)
    nobody = class_prices(offers, "cpu", JobNeeds(max_price=E18 // 2))
    assert (nobody.eligible, nobody.winner, nobody.winning_price, nobody.winning_score) == (0, None, None, None)
    assert nobody.to_json()["winningPrice"] is None and cpu.to_json()["minPrice"] == str(E18)
    assert [c.device for c in live_prices([], needs)] == list(DEVICE_CLASSES)
    assert live_prices([], needs)[0].median_price is None


def test_equal_scores_are_a_race_shown_at_the_cheapest() -> None:
    twins = [offer("b", 4), offer("a", 4)]
    c = class_prices(twins, "cpu", JobNeeds(max_price=8 * E18))
    assert (c.tied, c.winner, c.winning_price) == (2, "a", 4 * E18)


def test_the_built_in_cloud_table_is_dated_and_a_file_overrides_it(tmp_path: Path) -> None:
    assert BUILT_IN.date == PRICES_AS_OF and set(BUILT_IN.usd_per_hour) == {h.name for h in HARDWARE}
    path = tmp_path / "cloud.json"
    path.write_text(json.dumps({"date": "2026-12-01", "source": "my quote", "usd_per_hour": {"h100": 2.2}}))
    prices = load_cloud_prices(path)
    assert (prices.date, prices.source) == ("2026-12-01", "my quote")
    table = {h.name: h for h in prices.apply(HARDWARE)}
    assert table["h100"].usd_per_hour == 2.2 and table["a100"].usd_per_hour == BUILT_IN.usd_per_hour["a100"]
    assert prices.to_json() == {"date": "2026-12-01", "source": "my quote", "usdPerHour": {"h100": 2.2}}


@pytest.mark.parametrize(("content", "field"), [
    ({"usd_per_hour": {"h100": 2.0}}, "date"),
    ({"date": "01/12/2026", "usd_per_hour": {"h100": 2.0}}, "date"),
    ({"date": "2026-12-01"}, "usd_per_hour"),
    ({"date": "2026-12-01", "usd_per_hour": {"h100": -1}}, "usd_per_hour.h100"),
    ({"date": "2026-12-01", "usd_per_hour": {"h100": "cheap"}}, "usd_per_hour.h100"),
    ({"date": "2026-12-01", "usd_per_hour": {"h100": 2}, "currency": "EUR"}, "currency"),
    ({"date": "2026-12-01", "usd_per_hour": {"h100": 2}, "source": 3}, "source"),
])
def test_a_bad_cloud_table_names_the_field(tmp_path: Path, content: dict[str, object], field: str) -> None:
    path = tmp_path / "cloud.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=f": {field}: "):
        load_cloud_prices(path)


def test_a_cloud_price_for_an_unknown_class_or_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cloud.json"
    path.write_text(json.dumps({"date": "2026-12-01", "usd_per_hour": {"tpu": 1.0}}))
    with pytest.raises(ConfigError, match=r"usd_per_hour\.tpu: no such hardware class"):
        load_cloud_prices(path).apply(HARDWARE)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="unreadable"):
        load_cloud_prices(path)


def test_estimate_without_a_chain_says_the_on_chain_prices_were_not_read(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gensyn_py.cli.main import cli
    from tests.unit.test_estimate import spec_dict

    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(spec_dict("mlp")))
    cloud = tmp_path / "cloud.json"
    cloud.write_text(json.dumps({"date": "2026-12-01", "usd_per_hour": {"cpu": 0.09}}))
    env = {"GENSYN_DEPLOYMENTS_DIR": str(tmp_path), "GENSYN_CHAIN_ID": "", "GENSYN_RPC_URL": "http://127.0.0.1:9"}
    run = CliRunner().invoke
    table = run(cli, ["job", "estimate", str(spec)], env=env)
    assert table.exit_code == 0, table.output
    text = " ".join(table.output.split())
    assert "on-chain prices were not read: cannot reach an RPC node" in text
    assert f"cloud prices as of {PRICES_AS_OF}" in text
    data = json.loads(run(cli, ["job", "estimate", str(spec), "--offline", "--json", "--cloud-prices", str(cloud)],
                          env=env).output)
    assert data["onChainPrices"] == {"read": False, "reason": "on-chain prices were not read (--offline)"}
    assert data["cloudPrices"]["date"] == "2026-12-01"
    cpu = next(h for h in data["assumptions"] if h["name"] == "cpu")
    assert cpu["usdPerHour"] == 0.09
    bad = run(cli, ["job", "estimate", str(spec), "--offline", "--cloud-prices", str(spec)], env=env)
    assert bad.exit_code == 1 and "unknown field" in bad.stderr
