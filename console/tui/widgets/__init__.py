"""The console's widgets: every module here defines a Textual ``Widget`` subclass."""
