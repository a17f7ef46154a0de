"""Build step only (metadata is in pyproject.toml): a wheel carries the repository folders of
`rsr.bundled.BUNDLED_FOLDERS` under `rsr/_bundled/`, so an installed rsr has its core suite,
eval specs, recipes and examples without a checkout."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

FOLDERS = ("tasks/core", "tasks/live", "evals", "training/recipes", "training/accelerate", "examples",
           "tests/training/fixtures/trajectories.jsonl")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".cache")


class BuildWithBundled(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        root = Path(__file__).resolve().parent
        for rel in FOLDERS:
            target = Path(self.build_lib) / "rsr" / "_bundled" / rel
            shutil.rmtree(target, ignore_errors=True)
            if (root / rel).is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / rel, target)
            else:
                shutil.copytree(root / rel, target, ignore=IGNORE, symlinks=False)


setup(cmdclass={"build_py": BuildWithBundled})
