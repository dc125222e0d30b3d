"""Turning daemon data into Rich ``Text`` for the widgets, without Textual: agent text
always as plain, escaped text, never markup."""
