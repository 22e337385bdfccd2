from pyspark import pipelines as dp
from pyspark.sql import SparkSession
from pyspark_upsert_kafka import normalized_changelog

spark = SparkSession.active()


@dp.table
def orders():
    return spark.range(3).selectExpr("CAST(id AS STRING) AS order_id", "'upsert' AS _change_type", "id AS offset")


@dp.table
def orders_normalized():
    return normalized_changelog(spark.readStream.table("orders"), "order_id")
