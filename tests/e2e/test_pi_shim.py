"""The pi extension on its own: it type-checks against pi's definitions, and its logic holds under a fake pi.

``tsc --noEmit`` checks every module of the extension against the type
definitions of the cached pi install (``@earendil-works/pi-coding-agent``,
``pi-ai``, ``typebox``, ``@types/node``). ``node --test`` runs
node/shim.test.mjs and node/degraded.test.mjs with the cached Node 22, which
strips the types itself: the respawn cap, request deadlines, and what the
package does itself when memlane is missing (daily-file writes, capture
digests, transcripts, the snapshot, plain "unavailable" answers).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pi_harness import PACKAGE_DIR, PiInstall

pytestmark = pytest.mark.e2e

NODE_TESTS = Path(__file__).with_name("node")
TSC_TIMEOUT_S = 300
NODE_TEST_TIMEOUT_S = 180


def _pi_modules(pi: PiInstall) -> Path:
    """The node_modules directory pi was installed into."""
    return next(p for p in pi.cli.parents if p.name == "node_modules")


def _tsconfig(pi: PiInstall, where: Path) -> Path:
    modules = _pi_modules(pi)
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "target": "ES2022",
            "module": "ESNext",
            "moduleResolution": "bundler",
            # The modules import each other as ./x.ts: pi's loader and node's type stripping both want that.
            "allowImportingTsExtensions": True,
            # Only what node's type stripping can run: no enums, namespaces or parameter properties.
            "erasableSyntaxOnly": True,
            "verbatimModuleSyntax": True,
            "skipLibCheck": True,
            "types": ["node"],
            "typeRoots": [str(modules / "@types")],
            # The packages pi provides to its extensions, from the pi install.
            "paths": {
                "@earendil-works/*": [str(modules / "@earendil-works" / "*")],
                "typebox": [str(modules / "typebox")],
            },
        },
        "include": [str(PACKAGE_DIR / "extensions" / "**" / "*.ts")],
    }
    path = where / "tsconfig.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def test_the_extension_type_checks(pi_install: PiInstall, tsc: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [
            str(pi_install.node),
            str(tsc),
            "--pretty",
            "false",
            "-p",
            str(_tsconfig(pi_install, tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=TSC_TIMEOUT_S,
    )
    assert out.returncode == 0, f"tsc --noEmit failed:\n{out.stdout}{out.stderr}"


def test_the_shim_logic_under_a_fake_pi(pi_install: PiInstall, tmp_path: Path) -> None:
    out = subprocess.run(
        [
            str(pi_install.node),
            "--import",
            "./resolve_pi.mjs",
            "--test",
            "shim.test.mjs",
            "degraded.test.mjs",
        ],
        cwd=NODE_TESTS,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PI_NODE_MODULES": str(_pi_modules(pi_install)),
        },
        capture_output=True,
        text=True,
        timeout=NODE_TEST_TIMEOUT_S,
    )
    assert out.returncode == 0, f"node --test failed:\n{out.stdout[-6000:]}{out.stderr[-2000:]}"
    assert "# fail 0" in out.stdout
