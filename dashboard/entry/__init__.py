"""The Streamlit entry script, kept apart from ``pages/`` (a ``pages`` folder next to the
entry script would switch Streamlit to its older folder-based navigation)."""
