"""The Spark session the job, the benchmark and the tests use.

With a Spark Connect URL (``--remote`` or ``SPARK_REMOTE``) it is a Connect session: the job uses
only DataFrame functions, no ``sparkContext``. Otherwise, started from plain Python, it is a
``local[*]`` session bound to loopback (no UI) whose workers run this interpreter, so they import
the same kraftlog, and whose driver JVM maps its classes from an archive if ``python -m
kraftlog.spark.classes`` wrote one. Started by ``spark-submit`` or through Connect, the cluster's
master and network settings win; only the tuning below is added where the user set nothing. A
Connect session gets this kraftlog shipped to the server's Python workers.
"""

import hashlib
import os
import shutil
import sys
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path

import pyarrow as pa
import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

import kraftlog

#: Spark 4 (``DataFrame.toArrow``, ``to_arrow_schema(timezone=)``); else 3.5, the oldest supported.
SPARK_4 = int(pyspark.__version__.split(".")[0]) >= 4

#: Only for sessions we start ourselves: a laptop or CI box must not listen on other interfaces.
LOOPBACK = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.showConsoleProgress": "false",
}

#: Also only for our own sessions: the driver JVM plans a few jobs and collects notes (the Python
#: tasks do the work), and with its quick compiler alone it starts about 2 s sooner.
QUICK_JVM = "-XX:TieredStopAtLevel=1"


def arrow_schema(schema: StructType) -> pa.Schema:
    """``schema`` in Arrow, timestamps in UTC: Spark 4 is told the zone, 3.5 always gives UTC."""
    return to_arrow_schema(schema, timezone="UTC") if SPARK_4 else to_arrow_schema(schema)


def arrow_table(df: DataFrame) -> pa.Table:
    """``df``'s rows collected as one Arrow table of its schema: ``toArrow`` on Spark 4; on 3.5, which
    has none, the record batches 4's is made of (``_collect_as_arrow``; 3.5 runs classic only, see
    ``session``)."""
    if SPARK_4:
        return df.toArrow()
    batches = df._collect_as_arrow()
    schema = arrow_schema(df.schema)
    return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()


class NoJava(RuntimeError):
    """No java for an embedded session's driver to run."""


class NoConnect(RuntimeError):
    """Spark Connect asked of pyspark 3.5, whose Connect client lacks what the job uses."""


def java() -> str | None:
    """The java an embedded session's driver runs, as spark-submit finds it (``$JAVA_HOME/bin/java``,
    else ``java`` on PATH), resolved; None without one."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def _job_digest() -> str:
    """The job's own Spark code (``kraftlog/spark/*.py``): which Spark classes a run loads follows it,
    so an archive written by another version of the job (an RDD-era one missed 3,300 of the SQL
    classes the current one loads) is not taken for this one's."""
    folder = Path(__file__).parent
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(folder.glob("*.py")))).hexdigest()


def class_archive() -> Path | None:
    """Where the driver's class-data-sharing archive for this pyspark install, this Java and this
    version of the job is (under ``$XDG_CACHE_HOME/kraftlog``, or ``~/.cache/kraftlog``); None without
    a java to run."""
    java_ = java()
    if java_ is None:
        return None
    jars = os.path.realpath(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    key = "\0".join([pyspark.__version__, java_, str(os.stat(java_).st_mtime_ns), jars,
                     str(os.stat(jars).st_mtime_ns if os.path.isdir(jars) else 0), _job_digest()])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kraftlog"
    return cache / f"spark-driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def driver_options(archive_at_exit: Path | None = None) -> str:
    """The driver JVM's options for our own sessions: the quick compiler, and the class archive if
    there is one (checked as it is mapped: a damaged one is ignored, not a crash). With
    ``archive_at_exit``, no archive is used and one is written there at exit instead."""
    if archive_at_exit is not None:
        return f"{QUICK_JVM} -XX:ArchiveClassesAtExit={archive_at_exit} -Xlog:cds=error,cds+dynamic=error"
    archive = class_archive()
    if archive is None or not archive.is_file():
        return QUICK_JVM
    return f"{QUICK_JVM} -XX:SharedArchiveFile={archive} -XX:+VerifySharedSpaces"

#: SQL settings (the only kind a running session takes). One row of the decode stage is a whole
#: segment file, so Arrow batches are bounded in bytes; the folds want large batches of small rows;
#: files are listed on the driver (one Spark job per listing would cost more than it saves).
TUNING = {
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
    "spark.sql.execution.arrow.maxBytesPerBatch": str(64 << 20),
    "spark.sql.files.maxPartitionBytes": str(64 << 20),
    "spark.sql.parquet.compression.codec": "zstd",
}


def submitted() -> bool:
    """True when spark-submit (or pyspark) started this interpreter and owns the JVM."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session(master: str | None = None, app_name: str = "kraftlog", extra: dict[str, str] | None = None,
            remote: str | None = None) -> SparkSession:
    """The active session, or a new one: a Spark Connect session to ``remote`` (or ``SPARK_REMOTE``),
    else ``master`` (default ``local[*]``) unless spark-submit chose it."""
    # pyspark checks the pandas version even for Arrow-only functions; kraftlog does not use pandas
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if (remote or os.environ.get("SPARK_REMOTE")) and not SPARK_4:
        # 3.5's Observation reads its metrics from the JVM only (pyspark/sql/observation.py ``get``)
        raise NoConnect(f"the job runs through Spark Connect with pyspark 4 only (this is pyspark "
                        f"{pyspark.__version__}, whose Connect client cannot read the rows it counts); "
                        "use --master, or pip install 'pyspark[connect]>=4'")
    if remote or os.environ.get("SPARK_REMOTE") or submitted():
        # a Connect server or spark-submit owns the cluster; only SQL settings the user left unset are added
        if remote:
            builder = builder.remote(remote)
        elif master and not os.environ.get("SPARK_REMOTE"):
            builder = builder.master(master)
        spark = builder.getOrCreate()
        for key, value in {**TUNING, **(extra or {})}.items():
            if spark.conf.get(key, None) is None:
                spark.conf.set(key, value)
        if not submitted():
            _ship_package(spark)
        return spark
    if java() is None:  # else pyspark's launcher fails with a traceback about a gateway
        raise NoJava("Spark needs Java 17 or newer: no java in $JAVA_HOME/bin or on PATH")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {**LOOPBACK, **ONE_DAEMON, "spark.driver.extraJavaOptions": driver_options(), **TUNING, **(extra or {})}
    context = SparkContext.getOrCreate(SparkConf().setMaster(master or "local[*]").setAppName(app_name)
                                       .setAll(list(settings.items())))
    context.setLogLevel("WARN")
    # the Python workers start, with the passes' modules imported, while the SQL session is set up
    # and its first query planned (a second of the driver JVM's), and the driver discovers: the
    # first by a job that needs no SQL session (one daemon serves both kinds, see ONE_DAEMON)
    workers = threading.Thread(target=_start_workers, args=(context,), daemon=True)
    workers.start()
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    first = threading.Thread(target=_first_query, args=(spark,), daemon=True)
    first.start()
    _warming[:] = [workers, first]
    return spark


#: For our own sessions: pyspark's workers run in one daemon per environment, and a SQL runner's
#: (mapInArrow, the passes') differs from an RDD's only by this setting (Spark's
#: ``SPARK_SIMPLIFIED_TRACEBACK``), so that with it off the warm-up's RDD job starts the passes'
#: workers. A task's error still names its cause (``guard.one_line``), with pyspark's frames too.
ONE_DAEMON = {"spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled": "false"}

#: The threads warming an embedded session (workers, first query), until the first pass waits for them.
_warming: list[threading.Thread] = []


def workers_started(timeout: float = 120.0) -> None:
    """Wait for the warm-up ``session`` started: a pass submitted first would run its tasks ahead
    of the warm-up's (jobs run in the order they come), which then starts workers for nothing."""
    for thread in _warming:
        thread.join(timeout)
    _warming.clear()


def _ship_package(spark: SparkSession) -> None:
    """The kraftlog this client runs, as a zip of its modules, to a Connect server's Python workers
    (an artifact of this session only), so that they run the same code as the driver."""
    package = Path(kraftlog.__file__).parent
    if not package.is_dir():  # imported from a zip itself: the server has it already
        return
    with tempfile.TemporaryDirectory(prefix="kraftlog-ship-") as tmp:
        zipped = Path(tmp) / "kraftlog.zip"
        with zipfile.ZipFile(zipped, "w") as z:
            for path in sorted(package.rglob("*.py")):
                z.write(path, path.relative_to(package.parent))
        spark.addArtifacts(str(zipped), pyfile=True)


def _start_workers(context: SparkContext) -> None:
    """One task per core, so each core's Python worker is up with the passes' modules imported."""
    slots = context.defaultParallelism
    context.parallelize(range(slots), slots).mapPartitions(_import_passes).count()


def _first_query(spark: SparkSession) -> None:
    """A query shaped like the passes' (``mapInArrow`` over a range, collected as Arrow), so that
    the classes and generated code of the SQL session's first query are ready before the first pass."""
    arrow_table(spark.range(1, numPartitions=1).mapInArrow(_import_passes, "id long"))


def _import_passes(rows):
    import pyarrow as pa

    from kraftlog.spark.passes import freeze_imports

    pa.array([0])  # pyarrow's first conversion of Python values imports pandas
    freeze_imports()
    yield from rows
