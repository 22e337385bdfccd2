"""The forms of Spark's Python stateful operator the table helpers run on (tables/operator_form.py), as the tests
name them: every form a helper's Flink golden test runs in, and whether this pyspark has the Row form."""

from __future__ import annotations

from pyspark.sql import GroupedData

ROW_FORM = hasattr(GroupedData, "transformWithState")  # Spark's Row-based transformWithState: pyspark 4.1+
# "pandas", the default, on every pyspark; "rows" where pyspark has it
OPERATOR_FORMS = ["pandas", "rows"] if ROW_FORM else ["pandas"]
# the name Spark's state metadata gives each form's operator
OPERATOR_NAMES = {"rows": "transformWithStateInPySparkExec", "pandas": "transformWithStateInPandasExec"}
