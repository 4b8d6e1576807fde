"""Three jobs that look like real work, end to end on a local market of real daemons.

1. A ResNet-style CNN (ONNX, `onnx_models.ResNetCNN`) on a folder of RGB images packed with `gensyn data pack`
   (the images are drawn here: circles, squares and triangles of random colours, sizes and places);
2. a GPT-style language model (ONNX, `onnx_models.GPT`) on a text corpus packed with its own BPE tokenizer
   (the corpus is this project's documentation, so nothing is downloaded);
3. a fine-tune of job 2's verified result (`init.parent_job`) for more steps.

All in mode `repro`: validators replay the custom models bit-exactly. The script starts anvil and six role daemons,
submits the jobs as a requester, waits for them, downloads each verified model, and prints what each learned
(the loss on its dataset before and after) and whether anyone was slashed.

    python -m examples.workloads [--steps 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from examples.onnx_models import GPT, ResNetCNN, export

ROOT = Path(__file__).resolve().parents[1]
BATCH = 16
SEQ = 16
IMAGE = 16
SHAPES = ("circle", "square", "triangle")


@dataclass
class JobReport:
    name: str
    job_id: int
    loss_before: float
    loss_after: float
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    jobs: list[JobReport]
    slashed: list[tuple[str, int]]
    seconds: float


def draw_images(root: Path, per_class: int = 40, seed: int = 0) -> Path:
    """root/<shape>/<n>.png: a shape of random colour, size and place on a noisy background, 24x24."""
    from PIL import Image, ImageDraw

    rng = np.random.Generator(np.random.PCG64(seed))
    for shape in SHAPES:
        (root / shape).mkdir(parents=True, exist_ok=True)
        for n in range(per_class):
            bg = rng.integers(0, 80, size=(24, 24, 3), dtype=np.uint8)
            img = Image.fromarray(bg, "RGB")
            pen = ImageDraw.Draw(img)
            colour = tuple(int(c) for c in rng.integers(120, 256, size=3))
            r = int(rng.integers(5, 9))
            cx, cy = (int(v) for v in rng.integers(r, 24 - r, size=2))
            if shape == "circle":
                pen.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
            elif shape == "square":
                pen.rectangle((cx - r, cy - r, cx + r, cy + r), fill=colour)
            else:
                pen.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
            img.save(root / shape / f"{n:03d}.png")
    return root


def write_corpus(path: Path) -> Path:
    """This project's own documentation as one text file."""
    parts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    path.write_text("\n\n".join(p.read_text() for p in parts))
    return path


def mean_loss(model: torch.nn.Module, x: np.ndarray, y: np.ndarray, lm: bool) -> float:
    """Cross-entropy over the whole dataset, in batches of the job's size (the graph's fixed batch)."""
    from torch.nn import functional as F

    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x) - BATCH + 1, BATCH):
            out = model(torch.from_numpy(x[i:i + BATCH]))
            logits = out.reshape(-1, out.shape[-1]) if lm else out
            total += float(F.cross_entropy(logits, torch.from_numpy(y[i:i + BATCH]).reshape(-1))) * BATCH
            count += BATCH
    return total / count


def job_spec(model_entry: dict[str, Any], dataset: dict[str, Any], steps: int, lr: float, seed: int,
             **over: Any) -> dict[str, Any]:
    return {
        "version": 1, "model": model_entry, "optimizer": {"name": "adamw", "lr": lr},
        "batch_size": BATCH, "steps_per_unit": steps, "checkpoint_interval": max(1, steps // 5), "seed": seed,
        "mode": "repro", "hardware": {"device_class": "cpu", "min_memory_mb": 64}, "dataset": dataset, **over,
    }


def run(workdir: Path, steps: int = 100, say: Any = print, windows: dict[str, int] | None = None,
        tiny: bool = False) -> Report:
    """Run the three jobs in `workdir`; `windows` overrides the local market's protocol windows (seconds); `tiny`
    shrinks both models (the tests' size)."""
    import time

    from gensyn_py.devnet.compiler import compile_detailed
    from gensyn_py.proof.aggregation_unit import load_weights
    from gensyn_py.requester.download import fetch_final_model
    from gensyn_py.sim import accounting
    from gensyn_py.sim.localnet import LOCAL_PARAMS, LocalNetwork
    from gensyn_py.sim.market import Market
    from gensyn_py.storage.cid import cid_for_bytes
    from gensyn_py.train.graphs.graph import parse_graph
    from gensyn_py.train.graphs.module import GraphModule
    from gensyn_py.train.packing import pack_images, pack_text

    started = time.perf_counter()
    torch.manual_seed(0)
    say("packing the data: an image folder and a text corpus (gensyn data pack)")
    images = pack_images(draw_images(workdir / "images"), (IMAGE, IMAGE), channels=3)
    text = pack_text(write_corpus(workdir / "corpus.txt"), seq_len=SEQ, vocab_size=256)
    vocab = int(text.metadata["vocab_size"])
    say(f"  images: {images.dataset.num_examples} x {list(images.dataset.x.shape[1:])}, {len(SHAPES)} classes; "
        f"text: {text.dataset.num_examples} windows of {SEQ} tokens, vocabulary {vocab}")
    width, d, layers = (4, 32, 1) if tiny else (8, 64, 2)
    cnn = export(ResNetCNN(3, width, 2, 1, len(SHAPES)), torch.zeros(BATCH, 3, IMAGE, IMAGE))
    gpt = export(GPT(vocab, SEQ, d, 4, layers), torch.zeros(BATCH, SEQ, dtype=torch.int64))
    say(f"  models exported to ONNX: CNN {len(cnn):,} bytes, LM {len(gpt):,} bytes")

    compile_detailed()
    net = LocalNetwork(workdir / "net", params={**LOCAL_PARAMS, **(windows or {})}).start()
    try:
        market = Market(net)
        say("starting anvil and six role daemons")
        market.start_nodes()
        store = market.requester.store
        start_block = int(net.w3.eth.block_number)

        def entry(data: bytes) -> dict[str, Any]:
            store.put(data)
            return {"family": "onnx", "onnx": {"cid": cid_for_bytes(data), "size_bytes": len(data)}}

        def dataset(packed: Any) -> dict[str, Any]:
            from gensyn_py.train.data import dataset_entry

            store.put(packed.data)
            return dict(dataset_entry(packed.dataset, packed.data))

        window = 60 + steps
        jobs = {
            "cnn": market.submit(job_spec(entry(cnn), dataset(images), steps, 3e-3, 1), window).job_id,
            "lm": market.submit(job_spec(entry(gpt), dataset(text), steps, 1e-2, 2), window).job_id,
        }
        say(f"submitted job {jobs['cnn']} (CNN) and job {jobs['lm']} (LM); waiting for both to settle")
        market.wait_jobs(jobs.values(), 600 + 10 * steps)
        jobs["fine-tune"] = market.submit(job_spec(entry(gpt), dataset(text), steps, 3e-3, 3,
                                                   init={"parent_job": jobs["lm"]}), window).job_id
        say(f"submitted job {jobs['fine-tune']}: a fine-tune of job {jobs['lm']}'s verified model")
        market.wait_jobs([jobs["fine-tune"]], 600 + 10 * steps)

        reports = []
        for name, job in jobs.items():
            packed, data = (images, cnn) if name == "cnn" else (text, gpt)
            module = GraphModule(parse_graph(data))
            x, y = packed.dataset.x, packed.dataset.y
            if name == "fine-tune":
                module.load_state_dict(load_weights(fetch_final_model(market.requester, jobs["lm"])[1]))
            before = mean_loss(module, x, y, name != "cnn")
            module.load_state_dict(load_weights(fetch_final_model(market.requester, job)[1]))
            after = mean_loss(module, x, y, name != "cnn")
            extra: dict[str, float] = {}
            if name == "cnn":
                with torch.no_grad():
                    hits = sum(int((module(torch.from_numpy(x[i:i + BATCH])).argmax(-1).numpy()
                                    == y[i:i + BATCH]).sum()) for i in range(0, len(x) - BATCH + 1, BATCH))
                extra["accuracy"] = hits / (len(x) // BATCH * BATCH)
            else:
                extra["perplexity"] = math.exp(after)
            reports.append(JobReport(name, job, before, after, extra))
        slashed = accounting.slashes(market.protocol, start_block)
    finally:
        net.stop()
    return Report(reports, slashed, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="training steps per job (default 100)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the work directory (chain, store, logs) here")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="gensyn-workloads-"))
    report = run(workdir, args.steps)
    for j in report.jobs:
        extras = ", ".join(f"{k} {v:.3f}" for k, v in j.extra.items())
        print(f"job {j.job_id} {j.name:<10} loss {j.loss_before:.3f} -> {j.loss_after:.3f}  {extras}")
    print(f"slashed: {report.slashed or 'nobody'}; {report.seconds:.0f} s in all; work directory {workdir}")


if __name__ == "__main__":
    main()
