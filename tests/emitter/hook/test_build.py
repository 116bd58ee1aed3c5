"""The client hook library as one jar with a stable name, from its own ``pom.xml``: what
``python -m emitter.hook.build`` (and ``.ci/install``) leaves, and what a Java team gets from
``mvn install`` in its own build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from emitter.hook.build import JAR, M2, POM, SOURCES, build
from routewatch.testing.parts import versions

pytestmark = pytest.mark.slow  # real Maven builds: not in the fast suite

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
REPO = Path(__file__).resolve().parents[3]


def _pom(path: Path) -> ElementTree.Element:
    return ElementTree.parse(path).getroot()


def test_the_build_command_leaves_one_jar_with_a_stable_name() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "emitter.hook.build"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == JAR == REPO / "emitter/hook/target/routewatch-hook.jar"
    with zipfile.ZipFile(JAR) as jar:
        names = set(jar.namelist())
        producer = jar.read("io/routewatch/hook/RoutewatchProducer.class")
    expected = {
        str(s.relative_to(REPO / "emitter/hook/java")).replace(".java", ".class") for s in SOURCES
    }
    assert expected <= names
    assert "META-INF/maven/io.routewatch/routewatch-hook/pom.xml" in names
    # compiled for Java 8 (class file version 52), as RocketMQ 4.9's client is
    assert int.from_bytes(producer[6:8], "big") == 52


def test_a_changed_source_is_rebuilt_into_the_same_bytes() -> None:
    before = build().read_bytes()
    source = SOURCES[0]
    os.utime(source)  # newer than the jar: built again
    assert build().read_bytes() == before
    assert JAR.stat().st_mtime_ns >= source.stat().st_mtime_ns


def test_the_pom_compiles_against_the_client_the_tests_run() -> None:
    properties = _pom(POM).find("m:properties", NS)
    assert properties is not None
    assert (
        properties.findtext("m:rocketmq.version", namespaces=NS) == versions()["rocketmq4.version"]
    )


def test_a_java_team_installs_it_and_builds_against_it(tmp_path: Path) -> None:
    mvn = [shutil.which("mvn") or "mvn", "--batch-mode", "--quiet", f"-Dmaven.repo.local={M2}"]
    subprocess.run([*mvn, "-f", str(POM), "install"], check=True, timeout=1800)
    root = _pom(POM)
    coordinates = {t: root.findtext(f"m:{t}", namespaces=NS) for t in ("groupId", "artifactId")}
    version = root.findtext("m:version", namespaces=NS)
    app = tmp_path / "app"
    (app / "src/main/java/com/example").mkdir(parents=True)
    (app / "src/main/java/com/example/Orders.java").write_text(
        "package com.example;\n"
        "import io.routewatch.hook.RoutewatchProducer;\n"
        "import org.apache.rocketmq.client.producer.DefaultMQProducer;\n"
        "public class Orders {\n"
        "    public static DefaultMQProducer producer() {\n"
        '        return new RoutewatchProducer("orders");\n'
        "    }\n"
        "}\n"
    )
    (app / "pom.xml").write_text(
        f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId><artifactId>orders</artifactId><version>1</version>
  <properties><maven.compiler.release>17</maven.compiler.release></properties>
  <dependencies>
    <dependency>
      <groupId>{coordinates["groupId"]}</groupId><artifactId>{coordinates["artifactId"]}</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-client</artifactId>
      <version>{versions()["rocketmq4.version"]}</version>
    </dependency>
  </dependencies>
  <build><plugins><plugin>
    <groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId>
    <version>3.13.0</version>
  </plugin></plugins></build>
</project>
"""
    )
    done = subprocess.run(
        [*mvn, "-f", str(app / "pom.xml"), "compile"],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (app / "target/classes/com/example/Orders.class").is_file()
