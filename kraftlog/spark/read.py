"""The decode stage: every readable file through ``binaryFile`` and ``mapInArrow``, in parallel
per file, into rows of ``decode.DECODED``."""

import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from kraftlog.files.reader import Limits
from kraftlog.spark.decode import DECODED, decode_file
from kraftlog.spark.discover import Inventory, local_path

DECODED_SPARK = from_arrow_schema(DECODED)


def hadoop_path(path: str) -> str:
    """A local path as Hadoop takes it: ``file:`` and the path as is, glob characters escaped."""
    return "file:" + re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


def decoded(spark: SparkSession, inv: Inventory, limits: Limits = Limits()) -> DataFrame:
    """One DataFrame of the records, batches, regions, summaries and block digests of all files."""
    files = {f.file: (f.file_id, f.kind) for f in inv.readable}
    if not files:
        return spark.createDataFrame([], DECODED_SPARK)

    def decode_partition(batches):
        for batch in batches:
            paths = batch.column("path").to_pylist()
            contents = batch.column("content")
            for i, path in enumerate(paths):
                file_id, kind = files[local_path(path)]
                yield from decode_file(file_id, kind, contents[i].as_py(), limits)

    uris = [hadoop_path(p) for p in files]
    content = spark.read.format("binaryFile").load(uris).select("path", "content")
    return content.mapInArrow(decode_partition, DECODED_SPARK)
