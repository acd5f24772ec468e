"""The Milvus notes index (``notes.MilvusIndex``): memsearch's collection
schema on Milvus Lite, a Milvus server or Zilliz Cloud. pymilvus (the
``milvus`` extra) is imported only when a Milvus index is used."""
