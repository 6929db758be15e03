# Built in two stages: the image installs the wheel (exactly what `pip install loopsight` gives),
# never the source tree.
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY . /src
RUN pip install --no-cache-dir build && python -m build --wheel --outdir /dist

FROM python:3.11-slim
COPY --from=wheel /dist /dist
# clickhouse too: the compose file's scale profile runs this image on a ClickHouse store
RUN pip install --no-cache-dir "$(ls /dist/loopsight-*.whl)[all,clickhouse]" && rm -rf /dist
# In a container the services must listen on all interfaces; set LOOPSIGHT_TOKEN to require a token.
ENV LOOPSIGHT_DB=/data/loopsight.duckdb
VOLUME ["/data"]
WORKDIR /data
ENTRYPOINT ["loopsight"]
CMD ["collector", "--host", "0.0.0.0"]
