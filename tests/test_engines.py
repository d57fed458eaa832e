"""The job's tables read as a user of each engine would read them: Spark, DuckDB, polars (a folder
and a glob) and pandas each see every table's rows, with the cluster id from the partition folders
and the same values, as pyarrow's dataset reader does."""

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from kraftlog.spark.job import TABLES, Options, run

duckdb = pytest.importorskip("duckdb", reason="duckdb (in the 'test' extra) is not installed")
pd = pytest.importorskip("pandas", reason="pandas (in the 'test' extra) is not installed")
pl = pytest.importorskip("polars", reason="polars (in the 'test' extra) is not installed")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def out(spark, fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("engines") / "tables"
    run(spark, Options(inputs=[str(fixtures / "three-nodes")], output=str(out), at_offsets=[1000]))
    return out


def _key(folder) -> str:
    """The table's first int64 column (an offset, a position, a size): a value most rows differ in."""
    schema = ds.dataset(folder, format="parquet", partitioning="hive").schema
    return next(f.name for f in schema if f.type == pa.int64())


def _readers(spark):
    """engine -> (folder, columns) -> rows of those columns, each read the way its docs show."""
    return {
        "spark": lambda d, cols: [tuple(r) for r in spark.read.parquet(str(d)).select(*cols).collect()],
        "duckdb": lambda d, cols: duckdb.execute(
            "SELECT " + ", ".join(f'"{c}"' for c in cols) +
            f" FROM read_parquet('{d}/**/*.parquet', hive_partitioning = true)").fetchall(),
        "polars folder": lambda d, cols: pl.scan_parquet(d).select(cols).collect().rows(),
        # a glob is not read as hive partitions unless asked (polars' default is for a folder only)
        "polars glob": lambda d, cols: pl.scan_parquet(f"{d}/**/*.parquet", hive_partitioning=True)
        .select(cols).collect().rows(),
        "pandas": lambda d, cols: list(pd.read_parquet(d, columns=cols).itertuples(index=False, name=None)),
    }


@pytest.mark.parametrize("engine", ["spark", "duckdb", "polars folder", "polars glob", "pandas"])
def test_every_table_reads_the_same_in_each_engine(out, spark, engine):
    read = _readers(spark)[engine]
    read_rows = 0
    for table in TABLES:
        folder = out / table
        cols = ["cluster_id", _key(folder)]
        table_ = ds.dataset(folder, format="parquet", partitioning="hive").to_table(columns=cols)
        expected = sorted(zip(*table_.to_pydict().values(), strict=True), key=str)
        # pandas holds a column with nulls as floats (NaN); the cluster id is text in every engine
        got = sorted(((str(c), None if v is None or v != v else int(v)) for c, v in read(folder, cols)), key=str)
        assert got == expected, f"{engine} reads {table} differently"
        read_rows += len(got)
    assert read_rows > 10_000
