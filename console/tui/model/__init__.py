"""The console's state and logic, importing neither Textual nor Rich (nor any other part
of the console above it), so each module is tested on its own and fast."""
