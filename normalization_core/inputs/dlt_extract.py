from normalization_core.inputs.base import FileInput


class DltExtract(FileInput):
    name = "dlt_extract"
