"""Imported published benchmark tables (provenance ``published``), each with its source and stack.

Tables are Python literals rather than JSON so they ship with the package without a
package-data entry. Nothing here is measured by this project; the numbers are copied from
the cited source at the cited commit and must not be edited except to re-import.
"""
