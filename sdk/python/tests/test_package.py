"""The package itself: its sources parse as Python 3.9, and it installs into a venv offline."""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.abspath(os.path.join(HERE, ".."))
SRC = os.path.join(PKG, "src", "chidori")


class Package(unittest.TestCase):
    def test_sources_parse_as_python_3_9(self) -> None:
        files = [f for f in sorted(os.listdir(SRC)) if f.endswith(".py")]
        self.assertIn("client.py", files)
        for name in files:
            with open(os.path.join(SRC, name), encoding="utf-8") as f:
                text = f.read()
            ast.parse(text, filename=name, feature_version=(3, 9))
        # The check is not vacuous: 3.10's match statement is refused under 3.9's grammar.
        with self.assertRaises(SyntaxError):
            ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 9))

    def test_typed_marker_and_stdlib_only(self) -> None:
        self.assertTrue(os.path.isfile(os.path.join(SRC, "py.typed")))
        stdlib = set(sys.stdlib_module_names)
        for name in os.listdir(SRC):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(SRC, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    mods = [node.module or ""]
                else:
                    continue
                for m in mods:
                    self.assertIn(m.split(".")[0], stdlib, "%s imports %s, not in the standard library" % (name, m))

    def test_types_check_strictly_as_python_3_9(self) -> None:
        # Debian's mypy (python3-mypy, from make deps) on the package and its example.
        py = shutil.which("python3", path="/usr/bin") or sys.executable
        r = subprocess.run([py, "-m", "mypy", "--strict", "--python-version", "3.9", "--no-incremental",
                            os.path.join(SRC), os.path.join(PKG, "examples", "supervised.py")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertNotIn("No module named mypy", r.stdout, "python3-mypy is missing: run 'make deps'")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("Success: no issues found", r.stdout)

    def test_installs_into_a_venv_offline(self) -> None:
        tmp = tempfile.mkdtemp(prefix="chidori-sdk-venv.")
        try:
            venv = os.path.join(tmp, "venv")
            # Debian's python3 (PEP 668): a venv that sees Debian's setuptools and wheel.
            py = shutil.which("python3", path="/usr/bin") or sys.executable
            subprocess.run([py, "-m", "venv", "--system-site-packages", venv], check=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            vpy = os.path.join(venv, "bin", "python")
            # A copy: the build writes build/ and *.egg-info next to the sources.
            src = os.path.join(tmp, "sdk")
            shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            r = subprocess.run([vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                                "--disable-pip-version-check", src], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            self.assertEqual(r.returncode, 0, r.stdout)
            r = subprocess.run([vpy, "-c", "import chidori, os; print(chidori.__file__); "
                                "print(os.path.isfile(os.path.join(os.path.dirname(chidori.__file__), 'py.typed'))); "
                                "print(chidori.Client('unix:/x').base_url)"],
                               cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(r.returncode, 0, r.stdout)
            where, typed, base = r.stdout.split()
            self.assertTrue(where.startswith(venv), where)
            self.assertEqual((typed, base), ("True", "unix:/x"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
