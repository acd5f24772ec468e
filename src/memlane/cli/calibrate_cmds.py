"""``memlane calibrate``: measure the embedding model's cosine scale."""

from __future__ import annotations

from typing import Annotated

import typer

from memlane.cli.context import echo, open_memory, print_json


def calibrate(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Measure where the embedding model in use puts related and unrelated text.

    Search scores and their bands (strong, possible, weak) are calibrated on
    the bundled model. Another model spreads cosines differently; this
    embeds 40 fixed question/note pairs with it (one embedding call) and
    keeps the result, so its scores mean what the bundled model's do. The
    first index run with a new model does this by itself; run it again after
    the model behind an endpoint changed.
    """
    from memlane.core.cosine_scale import REFERENCE_SCALE
    from memlane.core.errors import ConfigError, EmbedderError
    from memlane.engine.calibration import derive_scale
    from memlane.engine.calibration.probes import PROBE_PAIRS

    with open_memory(ctx) as mem:
        settings = mem.config.embedding
        if settings.provider.strip().lower() == "none":
            raise ConfigError(
                "embedding.provider is none: searches are lexical and their scores need "
                "no model calibration",
                hint="set embedding.provider (onnx, the default, needs no network) to search "
                "by meaning",
            )
        embedder = mem.embedding.embedder
        if embedder is None:
            raise EmbedderError(
                f"the embedding model could not be loaded: {mem.embedding.problem}",
                hint="fix the [embedding] settings (`memlane status` shows them), then run "
                "`memlane calibrate` again",
            )
        measured = derive_scale(settings, embedder, mem.clock)
        mem.internals.model_scale = measured
    if as_json:
        print_json({**measured.to_json(), "probe_pairs": len(PROBE_PAIRS)})
        return
    scale = measured.scale
    assert scale is not None
    echo(f"model: {settings.model} ({settings.provider})")
    echo(
        f"on {len(PROBE_PAIRS)} probe pairs: a question and its own note at cosine "
        f"{scale.related_mean:.3f} on average, unrelated ones at {scale.unrelated_mean:.3f} "
        f"(spread {scale.unrelated_std:.3f})"
    )
    ref = REFERENCE_SCALE
    if measured.source == "bundled":
        echo(
            "this is the bundled model, the one scores are calibrated on "
            f"(reference: {ref.related_mean:.3f} / {ref.unrelated_mean:.3f}); nothing to keep"
        )
        return
    echo(
        f"the bundled model measures {ref.related_mean:.3f} / {ref.unrelated_mean:.3f}: a cosine "
        f"of {scale.related_mean:.3f} from this model now scores like "
        f"{scale.to_reference(scale.related_mean):.3f} from the bundled one"
    )
    echo(f"kept for this model (measured {measured.measured_at}); searches use it from now on")


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
