"""The dispatcher and its tables: operator schemas, the Library registration API, the ``npusim.ops``
namespace, dispatch thread-local state, record_function callbacks and API-usage logging."""
