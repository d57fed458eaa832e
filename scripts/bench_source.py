#!/usr/bin/env python3
"""Time the Spark data source (``spark.read.format("kraftlog")``) on an input; print one JSON line.

    .venv/bin/python scripts/bench_source.py --input DIR [--master local[2]]

For each table (``batches``, ``records``) the wall seconds of ``count()`` (every row made and handed
to Spark; the session is started and warmed up first, not timed), the rows, and rows per second.
``records`` includes the driver's planning read (see ``kraftlog.spark.source``). Compare with
``bench_spark.py --input DIR`` (the job, Spark startup included) on the same input.
"""

import argparse
import json
import time

from kraftlog.spark.session import session
from kraftlog.spark.source import register


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="a local folder or URI, as the job's --input")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = session(args.master, "kraftlog-bench-source")
    register(spark)
    spark.range(1).collect()
    result = {"input": args.input, "master": args.master}
    for table in ("batches", "records"):
        start = time.perf_counter()
        rows = spark.read.format("kraftlog").option("table", table).load(args.input).count()
        seconds = time.perf_counter() - start
        result[table] = {"rows": rows, "seconds": round(seconds, 2), "rows_per_s": round(rows / seconds)}
    print(json.dumps(result))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
