"""``kraftlog-spark ...`` and ``python -m kraftlog.spark ...``: the Spark job's command line
(``kraftlog.spark.cli``), or, where the ``spark`` extra is not installed, one line saying so.

This module imports nothing of the extra's, so that the line, not an ImportError, is what a user
of ``pip install kraftlog`` without it sees.
"""

import sys

#: The top-level modules the ``spark`` extra installs (py4j comes with pyspark).
SPARK_EXTRA = frozenset({"pyspark", "py4j", "pyarrow", "uuid6"})


def main(argv: list[str] | None = None) -> int:
    try:
        from kraftlog.spark.cli import main as job
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] not in SPARK_EXTRA:
            raise
        print(f"kraftlog-spark: the Spark job needs {e.name.partition('.')[0]}, which is not installed: "
              "pip install 'kraftlog[spark]' (and Java 17 or newer)", file=sys.stderr)
        return 2
    return job(argv)


if __name__ == "__main__":
    sys.exit(main())
