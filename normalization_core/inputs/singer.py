from normalization_core.inputs.base import FileInput


class SingerFiles(FileInput):
    name = "singer"
