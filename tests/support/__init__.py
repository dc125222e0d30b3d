"""What the tests share: harnesses that run the real daemon, console and programs, and fixed data.

tests/ is on sys.path (tests/conftest.py), so a test says `from support.daemon import running_daemon`.
"""
