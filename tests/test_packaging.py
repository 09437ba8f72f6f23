"""Packaging: the layer folders import only under the sdcbayes namespace."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest


def _run(code: str) -> str:
    # A fresh interpreter: sys.modules of the test process is polluted by other tests.
    # -I: isolated mode, so the checkout (the working directory) is not on sys.path
    # and the installed package is what gets imported
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], check=True, capture_output=True, text=True,
        timeout=120,
    )
    return out.stdout.strip()


def test_no_bare_layer_modules_after_import():
    code = (
        "import sys, sdcbayes, sdcbayes.models, sdcbayes.inference, sdcbayes.risk;"
        "print(sorted(m for m in ('models','inference','risk') if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_layers_resolve_inside_the_namespace():
    for name in ("sdcbayes.models", "sdcbayes.inference", "sdcbayes.risk"):
        mod = importlib.import_module(name)
        assert mod.__name__ == name
        assert mod.__doc__ and "import" in mod.__doc__  # each states what it may import


def test_import_sdcbayes_and_closed_form_do_not_import_pymc():
    code = (
        "import sys, sdcbayes, sdcbayes.risk.assess, sdcbayes.cli;"
        "print(sorted(m for m in ('pymc','arviz','pytensor','matplotlib') if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_console_script_entry_point_is_declared():
    from importlib import metadata

    eps = metadata.entry_points(group="console_scripts")
    assert any(ep.name == "sdcbayes" and ep.value == "sdcbayes.cli:main" for ep in eps)


def test_version_matches_distribution_metadata():
    from importlib import metadata

    import sdcbayes

    assert sdcbayes.__version__ == metadata.version("sdcbayes")


@pytest.mark.parametrize("name", ["nonexistent_thing"])
def test_unknown_attribute_raises(name):
    import sdcbayes

    with pytest.raises(AttributeError):
        getattr(sdcbayes, name)


def test_risk_reexports_resolve_to_their_modules():
    import sdcbayes.risk as risk

    for name in risk.__all__:
        obj = getattr(risk, name)
        assert obj.__module__.startswith("sdcbayes.risk."), (name, obj.__module__)
    with pytest.raises(AttributeError):
        risk.no_such_function  # noqa: B018


def test_ci_runs_exactly_the_readme_test_command():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0].strip() for b in readme.split("```sh\n")[1:]]
    main_job, tests = blocks[0], blocks[1]
    assert main_job.endswith("sdcbayes assess")
    ci = (root / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == tests


def test_readme_links_to_the_accuracy_studies_resolve():
    # the README's accuracy section indexes the studies of benchmarks/README.md by their
    # headings; a renamed or removed heading must not leave a dead link behind
    import re
    from pathlib import Path

    def slug(title):  # GitHub's heading anchors: lower case, punctuation dropped
        return "".join(c for c in title.lower() if c.isalnum() or c in " -_").replace(" ", "-")

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    studies = (root / "benchmarks" / "README.md").read_text(encoding="utf-8")
    anchors = {slug(t) for t in re.findall(r"^#+ (.+)$", studies, flags=re.M)}
    links = re.findall(r"\]\(benchmarks/README\.md#([^)]+)\)", readme)
    own = re.findall(r"\]\(#([^)]+)\)", studies)
    assert len(links) >= 30 and len(own) == len(links)
    assert set(links) <= anchors, set(links) - anchors
    assert set(own) <= anchors, set(own) - anchors
    # every quoted study name in the README's accuracy section is a heading there
    accuracy = readme.split("### Accuracy", 1)[1].split("\n## ", 1)[0]
    titles = set(re.findall(r"^### (.+)$", studies, flags=re.M))
    prose = re.sub(r"`[^`]*`", "", accuracy.split("The studies in [", 1)[0])  # no code spans
    quoted = [" ".join(q.split()) for q in re.findall(r'"([^"]{12,})"', prose)]
    assert len(quoted) >= 10
    missing = [q for q in quoted if not any(t.startswith(q.rstrip("?")) or q.startswith(t)
                                             for t in titles)]
    assert not missing, missing


def test_submodules_are_reachable_as_attributes(tmp_path):
    """``sdcbayes.models.latent_class`` and ``sdcbayes.risk.mokken`` after ``import sdcbayes``
    (in a fresh interpreter: an earlier test's imports would hide a failure; run outside
    the checkout, whose ``sdcbayes/`` folder would shadow the installed package)."""
    import subprocess
    import sys

    code = ("import sdcbayes, sys\n"
            "assert 'sdcbayes.models.latent_class' not in sys.modules\n"
            "for m in ('models.latent_class', 'models.poisson_gamma', 'models.negbin',\n"
            "          'risk.mokken', 'risk.suda', 'risk.decisions', 'risk.measures'):\n"
            "    mod = eval('sdcbayes.' + m)\n"
            "    assert mod.__name__ == 'sdcbayes.' + m, mod\n"
            "assert callable(sdcbayes.risk.suda.suda)\n"
            "for bad in ('models.nonesuch', 'risk.nonesuch'):\n"
            "    try:\n"
            "        eval('sdcbayes.' + bad)\n"
            "    except AttributeError:\n"
            "        pass\n"
            "    else:\n"
            "        raise SystemExit(bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_checkout_source_folder_finds_the_layers_beside_it(tmp_path):
    """Python in a checkout's root after a non-editable install imports the source folder
    (audit DD1 F6): its search path must then reach models/, inference/, risk/ beside it."""
    import sdcbayes

    checkout = tmp_path / "checkout"
    (checkout / "sdcbayes").mkdir(parents=True)
    for layer in ("models", "inference", "risk"):
        (checkout / layer).mkdir()
        (checkout / layer / "__init__.py").write_text("")
    assert sdcbayes._checkout_layers(str(checkout / "sdcbayes")) == [str(checkout)]
    # installed: the layers are inside the package folder
    installed = tmp_path / "site" / "sdcbayes"
    (installed / "risk").mkdir(parents=True)
    assert sdcbayes._checkout_layers(str(installed)) == []
    # a folder named sdcbayes with no layers beside it is left alone
    (tmp_path / "other" / "sdcbayes").mkdir(parents=True)
    assert sdcbayes._checkout_layers(str(tmp_path / "other" / "sdcbayes")) == []


def test_layers_import_from_the_checkout_root_without_the_installed_mapping(tmp_path):
    """The checkout's own sdcbayes/ imported first (as from its root after a non-editable
    install) still reaches sdcbayes.risk, from the checkout's files."""
    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys\n"
        # hide every finder but the path-based ones, so the editable install's mapping
        # (a meta-path finder) cannot resolve the layers
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "import sdcbayes.risk.measures as m\n"
        "print(m.__file__)\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(root / "risk" / "measures.py")
