"""Write ``kraftlog/schema/known_configs.py``: the config names Kafka defines for brokers, topics,
groups and client metrics, and which of them are PASSWORD-typed, from a Kafka source checkout.

Usage: python scripts/kafka_configs.py GIT_DIR [REV]   (GIT_DIR: a clone of apache/kafka)

Names come from the ``ConfigDef.define(NAME, TYPE, ...)`` calls of the broker-side modules (and the
shared SSL/SASL definitions in clients' ``common/config``), each NAME resolved through the
``String NAME = "..." (+ ...)`` constants of the same files. Producer, consumer, admin, Connect and
Streams configs are not read: they never appear in a ConfigRecord.
"""

import re
import subprocess
import sys
from pathlib import Path

MODULES = ("clients/src/main/java/org/apache/kafka/common/config/", "server/", "server-common/", "storage/",
           "group-coordinator/", "transaction-coordinator/", "share-coordinator/", "coordinator-common/",
           "raft/", "metadata/", "core/src/main/")
_CONST = re.compile(r'String\s+([A-Z][A-Z0-9_]*)\s*=\s*((?:"[^"]*"|[A-Za-z_][\w.]*)(?:\s*\+\s*(?:"[^"]*"|[A-Za-z_][\w.]*))*)\s*;')
_VAL = re.compile(r'val\s+([A-Z][A-Z0-9_]*)\s*(?::\s*String)?\s*=\s*((?:"[^"]*"|[A-Za-z_][\w.]*)(?:\s*\+\s*(?:"[^"]*"|[A-Za-z_][\w.]*))*)\s*$', re.M)
_DEFINE = re.compile(r'\.\s*define(?:Internal)?\(\s*([A-Za-z_][\w.]*|"[^"]*")\s*,\s*(?:(?:ConfigDef\.)?Type\.)?([A-Z]+)\b')


def sources(git_dir: str, rev: str) -> dict[str, str]:
    names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev], check=True,
                           capture_output=True, text=True).stdout.split()
    wanted = [n for n in names if n.startswith(MODULES) and "/src/main/" in n and n.endswith((".java", ".scala"))]
    return {n: subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{n}"], check=True, capture_output=True,
                              text=True).stdout for n in wanted}


_SYNONYM = re.compile(r'(sameName|single|listWith)(WithLogPrefix|WithLogCleanerPrefix|LogPrefix)?\(\s*TopicConfig\.(\w+)'
                      r'((?:\s*,\s*(?:"[^"]*"|new ConfigSynonym\("[^"]*"[^)]*\)))*)\s*\)')
_PREFIXES = {None: "", "WithLogPrefix": "log.", "LogPrefix": "log.", "WithLogCleanerPrefix": "log.cleaner."}


def synonyms(files: dict[str, str], topic_configs: dict[str, str]) -> dict[str, list[str]]:
    """``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``: a topic config's constant name -> the
    broker configs that set its default, the first being ``serverSynonym``."""
    text = next(t for n, t in files.items() if n.endswith("/ServerTopicConfigSynonyms.java"))
    out = {}
    for _how, prefix, const, rest in _SYNONYM.findall(text):
        names = re.findall(r'"([^"]*)"', rest) or [topic_configs[const]]
        out[const] = [_PREFIXES[prefix or None] + n for n in names]
    return out


def main(git_dir: str, rev: str = "HEAD") -> None:
    files = sources(git_dir, rev)
    topic = next(t for n, t in files.items() if n.endswith("/common/config/TopicConfig.java"))
    topic_configs = {name: expr.strip('"') for name, expr in _CONST.findall(topic)}
    server = synonyms(files, topic_configs)
    call = re.compile(r"ServerTopicConfigSynonyms\.serverSynonym\(\s*TopicConfig\.(\w+)\s*\)")
    files = {n: call.sub(lambda m: f'"{server[m[1]][0]}"', t) for n, t in files.items()}
    exprs: dict[str, str] = {}
    for text in files.values():
        for name, expr in [*_CONST.findall(text), *_VAL.findall(text)]:
            exprs.setdefault(name, expr)
    values: dict[str, str] = {}

    def value(token: str, depth: int = 0) -> str | None:
        token = token.strip()
        if token.startswith('"'):
            return token[1:-1]
        name = token.rsplit(".", 1)[-1]
        if name in values:
            return values[name]
        if name not in exprs or depth > 20:
            return None
        parts = [value(p, depth + 1) for p in re.findall(r'"[^"]*"|[A-Za-z_][\w.]*', exprs[name])]
        if any(p is None for p in parts):
            return None
        values[name] = "".join(parts)
        return values[name]

    types: dict[str, set[str]] = {}
    for text in files.values():
        for token, kind in _DEFINE.findall(text):
            name = value(token)
            if name and re.fullmatch(r"[a-z][a-z0-9._\-]*", name):
                types.setdefault(name, set()).add(kind)
    for names in server.values():  # the broker configs behind topic configs (log.retention.hours, ...)
        for name in names:
            types.setdefault(name, set()).add("SYNONYM")
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", rev], check=True, capture_output=True,
                            text=True).stdout.strip()
    plain = sorted(n for n, t in types.items() if "PASSWORD" not in t)
    secret = sorted(n for n, t in types.items() if "PASSWORD" in t)
    out = Path(__file__).parents[1] / "kraftlog" / "schema" / "known_configs.py"
    out.write_text(
        '"""Config names Kafka defines, generated by ``scripts/kafka_configs.py`` from apache/kafka at\n'
        f"{commit}: the ``ConfigDef.define`` calls of the broker-side modules (``ServerConfigs``,\n"
        "``KRaftConfigs``, ``ReplicationConfigs``, ``SocketServerConfigs``, ``ServerLogConfigs``, ``LogConfig``/\n"
        "``TopicConfig``, ``QuotaConfig``, ``GroupConfig``, ``ClientMetricsConfigs``, ``SslConfigs``, ``SaslConfigs``,\n"
        '``BrokerSecurityConfigs``, ...). Do not edit by hand."""\n\n'
        "#: Defined with a type other than PASSWORD: Kafka shows their values (``KafkaConfig.maybeSensitive``).\n"
        "NON_SENSITIVE = frozenset({\n" + "".join(f'    "{n}",\n' for n in plain) + "})\n\n"
        "#: Defined as PASSWORD: Kafka never shows their values.\n"
        "PASSWORD = frozenset({\n" + "".join(f'    "{n}",\n' for n in secret) + "})\n")
    print(f"{out}: {len(plain)} non-sensitive, {len(secret)} password configs", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
