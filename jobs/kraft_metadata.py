"""``spark-submit jobs/kraft_metadata.py ...``: the job's command line is ``kraftlog.spark.cli`` (``kraftlog-spark``)."""

from kraftlog.spark.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main())
