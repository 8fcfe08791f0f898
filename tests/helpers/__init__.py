"""Shared pieces of the test suite: imported as ``helpers.<module>`` (setup.cfg's ``[tool:pytest]``
puts ``tests/`` on the path); fixtures live in the ``conftest.py`` of the folder that uses them."""
