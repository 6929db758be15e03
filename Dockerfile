FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir '.[all]'
# In a container the services must listen on all interfaces; set LOOPSIGHT_TOKEN to require a token.
ENV LOOPSIGHT_DB=/data/loopsight.duckdb
VOLUME ["/data"]
ENTRYPOINT ["loopsight"]
CMD ["collector", "--host", "0.0.0.0"]
