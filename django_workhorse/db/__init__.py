"""The store: every call into the SQL functions, the SQL files shipped with the
package (in ``django_workhorse/sql/``, where released files stay) and the
migration operation that installs them.

It imports nothing else of the package but the exceptions and the states; see
docs/ARCHITECTURE.md.
"""
