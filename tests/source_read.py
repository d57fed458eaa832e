"""A Spark program reading the kraftlog data source, as a user's notebook would:
``source_read.py <input> <out folder> [--remote URL]``. Each table's DataFrame is written as
``<out>/<table>.parquet`` (collected by the driver with ``toArrow``), for the tests to compare."""

import sys
from pathlib import Path

import pyarrow.parquet as pq

from kraftlog.spark.session import session
from kraftlog.spark.source import register

given, out = sys.argv[1], Path(sys.argv[2])
remote = sys.argv[4] if sys.argv[3:4] == ["--remote"] else None
spark = session("local[2]", "kraftlog-source", remote=remote)
register(spark)
for table in ("batches", "records", "problems"):
    pq.write_table(spark.read.format("kraftlog").option("table", table).load(given).toArrow(),
                   out / f"{table}.parquet")
spark.stop()
